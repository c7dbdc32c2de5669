// The result of running one scenario on one backend: what the summary
// table, the JUnit and JSON files and the exit code are made of.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace streamsan::harness {

enum class result_status : std::uint8_t { passed, failed, skipped };

std::string_view to_string(result_status status) noexcept;

// A concrete wrong value that one seed of the sim scheduler produced.
struct witness {
  std::uint64_t seed = 0;
  std::string where;      // "buffer S" or "host read 'r'"
  std::uint64_t index = 0;
  float expected = 0;     // what the reference gives
  float seen = 0;         // what this seed gave
  std::string reference;  // "fixed twin stream/x_fixed", "expectation", "eager run"
};

// --schedules N on the sim backend.
struct schedule_report {
  std::uint64_t seeds = 0;
  std::uint64_t wrong_seeds = 0;  // seeds whose values differ from the reference
  std::optional<witness> first;   // the first such seed
};

struct scenario_result {
  std::string name;
  std::string file;
  std::string backend;  // "sim" or "cuda"
  std::vector<std::string> rules;
  std::string expected_verdict;
  std::string seen_verdict;  // "" when it did not run
  // Every diagnostic seen, described as in failure messages; compared
  // between backends.
  std::vector<std::string> seen_diagnostics;
  result_status status = result_status::passed;
  std::string skip_reason;
  std::vector<std::string> failures;  // each a full message
  double seconds = 0;
  std::optional<schedule_report> schedules;
};

// "seed 7 gave buffer S = 0 at index 0 where the fixed twin x gives 4".
std::string describe(const witness& w);

}  // namespace streamsan::harness
