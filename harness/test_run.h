// Runs selected scenarios of a corpus on one or more backends and collects
// a scenario_result for each (scenario, backend).
//
// Note [Worker processes]
// The runtime is one per process (runtime/runtime.h), so scenarios cannot
// replay concurrently in one process. With jobs > 1 each (scenario,
// backend) runs in a child `streamsan test --worker ...` that prints its
// result as one JSON document; a child that crashes or hangs fails only its
// own scenario, with the signal and the tail of its stderr in the message.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness/corpus.h"
#include "harness/scenario_result.h"

namespace streamsan::harness {

struct test_settings {
  std::vector<std::string> backends{"sim"};  // "sim", "cuda"
  unsigned jobs = 1;
  std::uint64_t schedules = 0;   // sim: seeds to search (0 = none)
  bool require_witness = false;  // a buggy scenario without a witness fails
  // The streamsan executable for worker processes (jobs > 1).
  std::string worker_executable;
  // A worker that runs longer than this is killed and fails its scenario.
  double worker_timeout_seconds = 300;
};

// One scenario on one backend, in this process.
scenario_result run_scenario(const scenario& s, const corpus& c, const std::string& backend,
                             const test_settings& settings);

using progress_callback = std::function<void(const scenario_result&, std::size_t done,
                                             std::size_t total)>;

// Every selected scenario on every backend, in the order given; results are
// in the same order (scenario-major). With several backends, a scenario
// whose backends disagree fails on each of them with a message that says
// how (Note [Backends must agree]).
std::vector<scenario_result> run_scenarios(const corpus& c,
                                           const std::vector<const scenario*>& selected,
                                           const test_settings& settings,
                                           const progress_callback& progress);

// The argument list a worker is started with (after the executable).
std::vector<std::string> worker_arguments(const scenario& s, const std::string& backend,
                                          const test_settings& settings);

}  // namespace streamsan::harness
