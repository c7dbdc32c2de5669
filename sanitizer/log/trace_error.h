// The error a trace file raises when it cannot be read or written. The
// message names the file and, for a malformed file, the byte offset and the
// cause: "trace.bin: offset 1234: record kind 77 is unknown".
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace streamsan {

class trace_error : public std::runtime_error {
 public:
  // A malformed file: "FILE: offset OFFSET: REASON".
  trace_error(std::string_view file, std::uint64_t offset, std::string_view reason);
  // A file that cannot be opened, read or written: "FILE: REASON".
  trace_error(std::string_view file, std::string_view reason);

  const std::string& file() const noexcept { return file_; }
  std::optional<std::uint64_t> offset() const noexcept { return offset_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string file_;
  std::optional<std::uint64_t> offset_;
  std::string reason_;
};

}  // namespace streamsan
