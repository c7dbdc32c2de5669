// Whether a text report is coloured: on a terminal, as ThreadSanitizer does,
// and never in files or pipes, unless the user says otherwise.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace streamsan {

enum class color_mode : std::uint8_t { automatic, always, never };

// "auto", "always" or "never" (also "1"/"0"); nullopt otherwise.
std::optional<color_mode> parse_color_mode(std::string_view text) noexcept;

// automatic: `fd` is a terminal, TERM is set and not "dumb", and NO_COLOR
// (https://no-color.org) is unset or empty.
bool use_color(color_mode mode, int fd) noexcept;

}  // namespace streamsan
