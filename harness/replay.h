// Replays a scenario through the runtime API (runtime/api.h) with a live
// engine on the access log, and reports what was observed.
//
// Note [How a replay runs]
// 1. The runtime is (re)started on the backend, with the sim scheduler's
//    policy and seed; an engine (no deduplication: every race of a scenario
//    counts) and an operation_tracker are attached to the access log.
// 2. Setup: streams and events are created, buffers not allocated by an
//    `alloc` operation are allocated and filled, and every device is
//    synchronized, so the setup is ordered before the first operation.
// 3. The operations run in order; an exception an operation raises is
//    recorded against it (expectations may ask for it) and replay goes on.
// 4. Final phase: guards are unwound, sync debug mode is turned off, every
//    device is synchronized, and the buffers still allocated are read back.
// The harness's own work in 2 and 4 is attributed to setup_phase and
// final_phase, never to a scenario operation.
#pragma once

#include <cstdint>
#include <string>

#include "harness/outcome.h"
#include "harness/scenario.h"
#include "sanitizer/tsan/tsan_runtime.h"

namespace streamsan::harness {

struct replay_options {
  std::string backend = "sim";  // "sim" or "cuda"
  // sim: run every operation in program order (the sim's eager policy, like
  // CUDA_LAUNCH_BLOCKING=1) instead of the seeded random scheduler.
  bool eager = false;
  std::uint64_t seed = 1;  // sim random policy
  // Mirror the engine's order into this ThreadSanitizer (the bridge of
  // sanitizer/tsan) for the replay; nullptr for none. For tests of the
  // bridge (tests/tsan).
  const tsan::tsan_api* tsan = nullptr;
};

// Why `backend` cannot run the scenario ("needs 2 devices, cuda has 1"),
// or "" when it can.
std::string cannot_run(const scenario& s, const std::string& backend);

// Throws std::runtime_error when the runtime cannot start at all.
outcome replay(const scenario& s, const replay_options& options);

}  // namespace streamsan::harness
