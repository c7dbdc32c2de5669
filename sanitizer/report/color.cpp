#include "sanitizer/report/color.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace streamsan {

std::optional<color_mode> parse_color_mode(std::string_view text) noexcept {
  if (text == "auto") return color_mode::automatic;
  if (text == "always" || text == "1") return color_mode::always;
  if (text == "never" || text == "0") return color_mode::never;
  return std::nullopt;
}

bool use_color(color_mode mode, int fd) noexcept {
  switch (mode) {
    case color_mode::always: return true;
    case color_mode::never: return false;
    case color_mode::automatic: break;
  }
  if (::isatty(fd) == 0) return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  const char* term = std::getenv("TERM");
  return term != nullptr && term[0] != '\0' && std::strcmp(term, "dumb") != 0;
}

}  // namespace streamsan
