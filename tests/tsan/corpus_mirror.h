// Issue #13's promise, checked over the scenario corpus: the ThreadSanitizer
// bridge never produces a report that streamsan's own engine would consider
// ordered. Every scenario with a host access is replayed on the sim with the
// bridge; each ThreadSanitizer report must be about a buffer on which the
// engine found a race (or a free or use of memory in use), and a scenario
// the engine finds clean must give none. Shared by the test over the model
// of TSan (normal builds) and the test over the real runtime (TSan builds).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness/scenario.h"
#include "sanitizer/tsan/tsan_runtime.h"

namespace streamsan::testing {

// One report, by the addresses of its two accesses.
struct mirror_report {
  std::vector<std::uint64_t> addresses;
  std::string text;  // for the failure message
};

struct report_source {
  std::function<void()> clear;
  std::function<std::vector<mirror_report>()> take;
};

struct mirror_verdict {
  std::string scenario;
  std::vector<std::string> problems;  // each a broken promise
  // Buffers the engine found a host-device race on, whose race TSan did
  // not report (allowed, counted).
  std::vector<std::string> missed;
  std::size_t reports = 0;
};

// Whether the scenario touches memory from the host: host reads and writes,
// host functions, copies and memsets of host-accessible buffers.
bool has_host_access(const harness::scenario& s);

mirror_verdict check_scenario(const harness::scenario& s, const tsan::tsan_api& api,
                              const report_source& reports);

// Loads the corpus of $STREAMSAN_SCENARIOS.
std::vector<harness::scenario> corpus_scenarios();

}  // namespace streamsan::testing
