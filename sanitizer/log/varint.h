// LEB128 variable-length integers, the integer encoding of trace files
// (docs/trace-format.md). Unsigned values use 7 bits per byte, least
// significant group first, high bit = "more bytes follow". Signed values are
// zigzag-mapped first so that small negative numbers stay short.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace streamsan {

// A uint64 needs at most 10 groups of 7 bits.
inline constexpr std::size_t max_varint_bytes = 10;

inline void put_varint(std::vector<std::uint8_t>& out, std::uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<std::uint8_t>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<std::uint8_t>(value));
}

constexpr std::uint64_t zigzag_encode(std::int64_t value) noexcept {
  return (static_cast<std::uint64_t>(value) << 1) ^
         static_cast<std::uint64_t>(value >> 63);
}

constexpr std::int64_t zigzag_decode(std::uint64_t value) noexcept {
  return static_cast<std::int64_t>(value >> 1) ^ -static_cast<std::int64_t>(value & 1);
}

enum class varint_status : std::uint8_t {
  ok,
  truncated,  // the input ended inside the varint
  overflow,   // more than 64 bits of payload
};

// Decodes the varint at in[pos] and advances pos past it. On failure pos is
// left unchanged.
inline varint_status get_varint(std::span<const std::uint8_t> in, std::size_t& pos,
                                std::uint64_t& value) noexcept {
  std::uint64_t result = 0;
  for (std::size_t i = 0; i < max_varint_bytes; ++i) {
    if (pos + i >= in.size()) return varint_status::truncated;
    const std::uint8_t byte = in[pos + i];
    const std::uint64_t group = byte & 0x7f;
    // The tenth byte may only carry the single remaining bit.
    if (i == max_varint_bytes - 1 && group > 1) return varint_status::overflow;
    result |= group << (7 * i);
    if ((byte & 0x80) == 0) {
      pos += i + 1;
      value = result;
      return varint_status::ok;
    }
  }
  return varint_status::overflow;
}

}  // namespace streamsan
