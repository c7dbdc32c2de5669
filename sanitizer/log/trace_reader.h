// Reads a binary trace file (trace_format.h, docs/trace-format.md) back into
// records, validating everything on the way.
//
// Note [A trace is hostile input]
// A trace may be truncated (the writer died), corrupted, or crafted. The
// reader never trusts a count or a length: every length is checked against
// the bytes that really remain before anything is allocated, every payload
// must decode to exactly its length, integers must fit their fields, enums
// must name an enumerator, booleans must be 0 or 1, byte ranges must not
// wrap, graph edges must name existing nodes, and interned strings and
// stacks must be defined (in id order) before they are used. Any violation
// is a trace_error naming the file, the byte offset and the cause; records
// before it have already been delivered.
#pragma once

#include <cstdint>
#include <filesystem>
#include <istream>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "sanitizer/log/record.h"

namespace streamsan {

struct trace_reader_options {
  // Accept a trace that ends cleanly after a record but has no end-of-trace
  // marker, as when the writing process was killed. Off by default so that
  // a truncated file is never mistaken for a complete run.
  bool allow_missing_end = false;
};

class trace_reader {
 public:
  // Opens the file and checks its header; throws trace_error.
  explicit trace_reader(const std::filesystem::path& path, trace_reader_options options = {});
  // A trace held in memory; `name` stands for the file in messages.
  static trace_reader from_bytes(std::string name, std::string bytes,
                                 trace_reader_options options = {});

  trace_reader(trace_reader&&) noexcept;
  trace_reader& operator=(trace_reader&&) noexcept;
  ~trace_reader();

  // The next record, or nullptr after the last one. The record and the data
  // its views point to stay valid until the next call (reader-owned storage).
  // Throws trace_error on malformed input.
  const record* next();

  // Feeds every remaining record to `sink`; returns how many.
  std::uint64_t read_all(record_sink& sink);

  const std::string& name() const noexcept { return name_; }
  std::uint32_t version() const noexcept { return version_; }
  // Byte offset of the next unread byte.
  std::uint64_t offset() const noexcept { return offset_; }
  std::uint64_t records_read() const noexcept { return records_; }
  // True once the end-of-trace marker was read.
  bool complete() const noexcept { return complete_; }

 private:
  friend class trace_decoder;
  template <class T>
  struct list_pool {
    std::vector<std::vector<T>> lists;
    std::size_t used = 0;
  };

  trace_reader(std::string name, std::unique_ptr<std::istream> in, std::uint64_t size,
               trace_reader_options options);
  void read_header();
  std::uint64_t read_varint(std::string_view what);
  [[noreturn]] void fail(std::uint64_t offset, std::string_view reason) const;
  void read_end(std::uint64_t record_offset, std::uint64_t length);

  std::string name_;
  std::unique_ptr<std::istream> in_;
  std::uint64_t size_ = 0;
  std::uint64_t offset_ = 0;
  trace_reader_options options_;
  std::uint32_t version_ = 0;
  std::uint64_t records_ = 0;
  std::uint64_t last_seq_ = 0;
  bool complete_ = false;

  // Storage the current record's views point into.
  std::vector<std::uint8_t> payload_;
  std::tuple<list_pool<std::uint64_t>, list_pool<access>, list_pool<graph_node>,
             list_pool<graph_edge>>
      pools_;
  record record_;

  // Interned ids defined so far: [1, strings_defined_] and [1, stacks_defined_].
  std::uint32_t strings_defined_ = 0;
  std::uint32_t stacks_defined_ = 0;
};

// Reads a whole trace file into `sink`; returns the number of records.
std::uint64_t read_trace(const std::filesystem::path& path, record_sink& sink,
                         trace_reader_options options = {});

}  // namespace streamsan
