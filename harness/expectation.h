// What a scenario says must be observed when it is replayed. Operations are
// named by their labels; buffers, streams and events by their declared names.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "harness/source_mark.h"
#include "sanitizer/engine/diagnostic.h"

namespace streamsan::harness {

// Fields left empty match anything. The parser requires hazard, buffer,
// current and previous for the race kinds, so that a race test pins down
// which race it means.
struct expected_diagnostic {
  diagnostic_kind kind = diagnostic_kind::stream_race;
  std::optional<hazard> hazard_kind;
  std::string buffer;
  std::string current;   // label of the operation that found the problem
  std::string previous;  // label of the earlier, conflicting operation
  std::string event;     // the event a synchronization error is about
  std::string stream;    // the stream a synchronization error is about
  source_mark where;
};

struct expected_buffer {
  std::string buffer;
  std::vector<float> values;
  source_mark where;
};

// Allocator statistics by name (stat_catalog.h), in bytes or counts.
using stat_values = std::map<std::string, std::int64_t, std::less<>>;

// The result of a labelled operation: a query's answer, the elements a host
// read saw, or allocator statistics (a subset of the names is enough).
using expected_value = std::variant<bool, std::vector<float>, stat_values>;

struct expected_result {
  std::string label;
  expected_value value;
  source_mark where;
};

// An error the operation must raise, or a sync-debug warning it must give;
// `message` is a substring of what the runtime says.
struct expected_error {
  std::string label;
  std::string message;
  source_mark where;
};

struct expectation {
  std::vector<expected_diagnostic> diagnostics;  // empty = `none`
  std::vector<expected_buffer> buffers;
  std::vector<expected_result> results;
  std::vector<expected_error> errors;
  std::vector<expected_error> warnings;
};

}  // namespace streamsan::harness
