// A catalog of bad traces, one per way a trace can be corrupt, truncated, of
// another version or hostile (claims of huge lengths and counts, nested
// lists, unknown record kinds), with the byte offset and the cause the reader
// must name. The reader tests, the allocation test and the CLI tests
// (`streamsan analyze` and `dump` exit 3) all go through it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace streamsan::testing {

struct bad_trace {
  std::string name;     // also the file name the CLI tests write
  std::string bytes;
  std::string message;  // the trace_error message after "FILE: "
};

// Each must be refused with `message`.
std::vector<bad_trace> bad_traces();

// Valid traces whose values are hostile (an allocation of 2^64 - 1 bytes
// accessed across it, ids at the top of their range): read and analyzed,
// never met with an allocation of the claimed size.
struct hostile_trace {
  std::string name;
  std::string bytes;
};
std::vector<hostile_trace> hostile_valid_traces();

}  // namespace streamsan::testing
