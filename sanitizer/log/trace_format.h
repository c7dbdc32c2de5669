// The binary trace file layout shared by trace_writer and trace_reader.
// docs/trace-format.md describes it byte by byte.
//
//   file   := header record* end
//   header := magic[8] version:u32le flags:u32le
//   record := tag:varint length:varint payload[length]
//   payload:= seq_delta:zigzag-varint thread:varint stack:varint fields...
//   end    := end_tag:varint length:varint record_count:varint
//
// The length prefix lets a reader bound every allocation by the bytes that
// really follow and check that a payload decodes to exactly its length.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "sanitizer/log/record.h"
#include "sanitizer/log/record_names.h"

namespace streamsan::trace_format {

inline constexpr std::array<char, 8> magic = {'S', 'T', 'R', 'M', 'S', 'A', 'N', '\0'};
inline constexpr std::uint32_t version = access_log_version;
inline constexpr std::size_t header_size = 16;

// No flag is defined yet; a reader rejects bits it does not know, so a later
// flag can change the meaning of the file safely.
inline constexpr std::uint32_t known_flags = 0;

// Record tags: record_body alternative index + 1 (1 ... record_kind_count).
inline constexpr std::uint64_t tag_of(std::size_t alternative_index) noexcept {
  return alternative_index + 1;
}
inline constexpr bool is_record_tag(std::uint64_t tag) noexcept {
  return tag >= 1 && tag <= record_kind_count;
}
inline constexpr std::size_t alternative_of(std::uint64_t tag) noexcept {
  return static_cast<std::size_t>(tag - 1);
}

// The last record of a complete trace; its payload is the number of records
// before it. Without it a reader cannot tell a trace whose writer died from a
// complete one.
inline constexpr std::uint64_t end_tag = 127;
static_assert(record_kind_count < end_tag);

}  // namespace streamsan::trace_format
