#include "harness/stat_catalog.h"

#include <array>

namespace streamsan::harness {
namespace {

using namespace std::string_view_literals;

// torch.cuda's memory_allocated / memory_reserved / max_* and the
// memory_stats counters, in bytes or counts.
constexpr std::array names{
    "allocated_bytes"sv,     "reserved_bytes"sv,      "max_allocated_bytes"sv,
    "max_reserved_bytes"sv,  "allocations.current"sv, "allocations.peak"sv,
    "allocations.allocated"sv, "allocations.freed"sv, "segments.current"sv,
    "segments.peak"sv,       "segments.allocated"sv,  "segments.freed"sv,
    "active_blocks.current"sv, "active_blocks.peak"sv, "active_bytes.current"sv,
    "active_bytes.peak"sv,   "num_ooms"sv,            "num_alloc_retries"sv,
};

}  // namespace

std::span<const std::string_view> known_stat_names() noexcept { return names; }

}  // namespace streamsan::harness
