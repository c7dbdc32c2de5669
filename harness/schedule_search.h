// --schedules N: replays a scenario on the sim backend under N seeds of the
// random scheduler and compares the values each seed produced with a
// reference.
//
// Note [What a witness is]
// The engine finds a race from the happens-before order alone, whatever the
// schedule. A witness shows that the race is real: a seed under which the
// buggy scenario computed a wrong value. The reference is what the fixed
// twin's expectation says the buffers (and host reads, by label) hold; when
// the twin says nothing about them, it is the scenario's own eager run (the
// sim's program-order policy, like CUDA_LAUNCH_BLOCKING=1). A fixed scenario
// is compared with its own expectation (or eager run) and must never differ
// under any seed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/outcome.h"
#include "harness/scenario.h"
#include "harness/scenario_result.h"

namespace streamsan::harness {

struct reference_values {
  std::map<std::string, std::vector<float>, std::less<>> buffers;
  std::map<std::string, std::vector<float>, std::less<>> host_reads;  // by label
  std::string source;  // "fixed twin NAME", "expectation", "eager run"
};

// `twin` may be nullptr.
reference_values reference_for(const scenario& s, const scenario* twin);

// The first element where `seen` differs from the reference, as a witness
// for `seed`; nullopt when every compared value agrees.
std::optional<witness> compare_with_reference(const scenario& s, const reference_values& ref,
                                              const outcome& seen, std::uint64_t seed);

// Replays seeds 1..seeds. Failures (a fixed scenario that went wrong, or
// whose diagnostics changed with the seed) are appended to `failures`.
schedule_report search_schedules(const scenario& s, const scenario* twin, std::uint64_t seeds,
                                 std::vector<std::string>& failures);

}  // namespace streamsan::harness
