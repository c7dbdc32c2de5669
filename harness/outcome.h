// What one replay of a scenario observed, in the scenario's own terms:
// diagnostics name operations by index and buffers, streams and events by
// their declared names, so that they can be compared with the expectation.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "harness/expectation.h"
#include "sanitizer/engine/diagnostic.h"

namespace streamsan::harness {

inline constexpr std::size_t no_operation = static_cast<std::size_t>(-1);
// Pseudo operations for the harness's own work around the scenario
// (Note [How a replay runs] in replay.h).
inline constexpr std::size_t setup_phase = static_cast<std::size_t>(-2);  // allocate, fill
inline constexpr std::size_t final_phase = static_cast<std::size_t>(-3);  // synchronize, read back

struct seen_diagnostic {
  diagnostic_kind kind = diagnostic_kind::stream_race;
  hazard hazard_kind = hazard::none;
  std::string buffer;                // "" when the diagnostic names no buffer we know
  std::size_t current = no_operation;  // index into scenario::operations
  std::size_t previous = no_operation;
  std::string event;
  std::string stream;
  std::uint32_t count = 1;
};

// A query's answer, a host read's elements, allocator statistics, or the
// milliseconds elapsed_time returned.
using seen_value = std::variant<bool, std::vector<float>, stat_values, double>;

struct seen_message {
  std::size_t operation = no_operation;
  std::string message;
};

struct outcome {
  std::vector<seen_diagnostic> diagnostics;
  // Contents after the final synchronize, for buffers still allocated.
  std::map<std::string, std::vector<float>, std::less<>> buffers;
  // Where each buffer lived in this process: [address, address + bytes).
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>, std::less<>> buffer_addresses;
  std::map<std::size_t, seen_value> results;  // by operation index
  std::vector<seen_message> errors;           // exceptions the runtime raised
  std::vector<seen_message> warnings;         // sync debug mode warnings
  // Replay problems that are not the scenario's (e.g. a diagnostic about an
  // object the harness cannot name). Each fails the scenario.
  std::vector<std::string> problems;
};

}  // namespace streamsan::harness
