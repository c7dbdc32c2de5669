// A record_sink that writes the access log to a binary trace file
// (trace_format.h, docs/trace-format.md) for `streamsan analyze` and
// `streamsan dump` to read later, possibly on another machine.
//
// Records are encoded into a buffer and written in large chunks. The
// recorder serializes on_record calls, so the writer takes no lock.
//
// Note [Symbols travel with the trace]
// Stacks are raw return addresses, which mean nothing outside the process
// that captured them (ASLR, other binaries). On close() the writer looks up
// every distinct frame address of every stack_define it saw, once each,
// while the code is still mapped, and appends a frame_symbol record per
// address. The reader's log_tables then resolve frames without the binary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unordered_set>
#include <vector>

#include "sanitizer/log/record.h"

namespace streamsan {

struct trace_writer_options {
  // Append frame_symbol records on close (see Note [Symbols travel with the
  // trace]). Off only where no symbols are wanted (tests of the format).
  bool symbolize = true;
  // Bytes buffered before a write to the file.
  std::size_t buffer_bytes = std::size_t{1} << 16;
};

class trace_writer final : public record_sink {
 public:
  // Creates (truncates) the file and writes the header; throws trace_error
  // when the file cannot be created.
  explicit trace_writer(std::filesystem::path path, trace_writer_options options = {});
  // Closes the file like close(), but swallows errors: a destructor must not
  // throw. Call close() to learn whether the trace is complete.
  ~trace_writer() override;

  // Neither copyable nor movable: recorders hold sinks by address.
  trace_writer(const trace_writer&) = delete;
  trace_writer& operator=(const trace_writer&) = delete;

  // Encodes one record. A write error is remembered (and reported by
  // close()); records after an error or after close() are not written.
  void on_record(const record& r) override;

  // Appends the frame symbols and the end-of-trace marker, flushes and closes
  // the file. Throws trace_error naming the file on any write error seen so
  // far. Only the first call does anything.
  void close();

  bool is_open() const noexcept { return file_ != nullptr; }
  const std::filesystem::path& path() const noexcept { return path_; }
  // Records encoded so far, frame_symbol records included.
  std::uint64_t records_written() const noexcept { return records_; }

 private:
  void write_record(const record& r);
  void append_symbols();
  void flush_buffer();
  void fail(std::string reason);

  std::filesystem::path path_;
  std::string name_;  // path_ as it appears in messages
  trace_writer_options options_;
  std::FILE* file_ = nullptr;
  std::vector<std::uint8_t> buffer_;
  std::vector<std::uint8_t> payload_;  // scratch for one record's payload
  std::uint64_t records_ = 0;
  std::uint64_t last_seq_ = 0;
  std::unordered_set<std::uint64_t> frames_;  // to symbolize on close
  std::string error_;                         // first write error, "" if none
};

}  // namespace streamsan
