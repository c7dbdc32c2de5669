// The allocator statistics a scenario can check (S-MEM-2), by the names
// scenarios use. Replay reads them from the runtime's statistics.
#pragma once

#include <span>
#include <string_view>

namespace streamsan::harness {

std::span<const std::string_view> known_stat_names() noexcept;

}  // namespace streamsan::harness
