// Builds trace files byte by byte, as docs/trace-format.md describes them,
// for the tests of malformed and hostile traces.
#pragma once

#include <cstdint>
#include <string>

#include "sanitizer/log/record_names.h"
#include "sanitizer/log/trace_format.h"

namespace streamsan::testing {

inline std::string varint(std::uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

inline std::string header(std::uint32_t version = trace_format::version,
                          std::uint32_t flags = 0) {
  std::string out("STRMSAN\0", 8);
  for (const auto word : {version, flags}) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(word >> (8 * i)));
  }
  return out;
}

template <class T>
std::uint64_t tag() {
  return record_index<T>() + 1;
}

// A record with a zero header (seq delta 0, thread 0, stack 0).
template <class T>
std::string rec(const std::string& fields) {
  const std::string payload = std::string(3, '\0') + fields;
  return varint(tag<T>()) + varint(payload.size()) + payload;
}

inline std::string end_marker(std::uint64_t records) {
  return varint(127) + varint(varint(records).size()) + varint(records);
}

}  // namespace streamsan::testing
