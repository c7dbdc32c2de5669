// Knobs of the simulated device (runtime/sim). See docs/runtime.md, "The sim
// scheduler".
#pragma once

#include <cstdint>

namespace streamsan::rt {

enum class sim_policy : std::uint8_t {
  // Every runnable operation runs at the next progress point, oldest first:
  // the device looks synchronous (like CUDA_LAUNCH_BLOCKING=1, S-ASYNC-2).
  eager,
  // A seeded pseudo-random scheduler decides at each progress point how many
  // runnable operations run and which ones: missing synchronization shows up
  // as wrong values under some seeds, reproducibly.
  random,
};

struct sim_options {
  int device_count = 2;
  std::uint64_t memory_per_device = std::uint64_t{1} << 30;  // reported and enforced
  sim_policy policy = sim_policy::random;
  std::uint64_t seed = 1;
  // random policy: the chance (per mille) that a progress point runs one more
  // runnable operation; 0 leaves all work until the host blocks.
  unsigned progress_per_mille = 500;
  // Peer access between distinct devices (can_access_peer).
  bool peer_access = true;
  // Freed memory is poisoned and kept this long (bytes, FIFO) before it is
  // returned to the host heap, so that a use after free reads garbage instead
  // of crashing the process.
  std::uint64_t quarantine_bytes = std::uint64_t{64} << 20;
};

}  // namespace streamsan::rt
