// Text from outside (an option, a scenario's name, a kernel's name) as an
// error message shows it: bytes that are not printable ASCII (a NUL, a
// control character, a stray UTF-8 fragment) as \xNN, so that the message
// names exactly what was given and a NUL cannot cut it short. Found by the
// fuzz targets (docs/reliability.md).
#pragma once

#include <string>
#include <string_view>

namespace streamsan {

inline std::string printable_text(std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += hex[byte >> 4];
      out += hex[byte & 0xf];
    }
  }
  return out;
}

}  // namespace streamsan
