// The simulated device's pending work: operations with dependencies, run one
// at a time on the host by a seeded policy.
//
// Note [The sim scheduler]
// Every operation the sim accepts (a kernel, a copy, an event record, a
// wait, a host function, a graph node) becomes an op with the ids of the ops
// it must follow: the previous op of its stream (S-STREAM-1), the legacy
// default stream's implicit dependencies (S-DEFAULT-1), waited events
// (S-EVENT-2), a graph's edges (S-GRAPH-2). An op whose dependencies have all
// completed is runnable. Nothing runs in the background: runnable ops run
// only at progress points, which are the backend's API calls, and while the
// host blocks (synchronize, a synchronous copy), when runnable ops run until
// the awaited condition holds. At a progress point the random policy runs a
// seeded random number of runnable ops, each chosen at random among the
// runnable ones; the eager policy runs all of them, oldest first. Ordering
// that the program did not ask for is thus really absent: a consumer on
// another stream may run before its producer, under some seed, and the same
// seed and calls always give the same schedule.
//
// Simulated time advances by each op's duration as it runs; event records
// read it, which gives elapsed_time deterministic values.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/backend/sim_options.h"
#include "runtime/sim/sim_random.h"

namespace streamsan::rt::sim {

using op_id = std::uint64_t;  // 0 = none (always complete)

class scheduler {
 public:
  scheduler(const sim_options& options, int device_count);

  // Adds an op that runs after `deps` (0 and completed ids are ignored).
  op_id enqueue(int device, std::span<const op_id> deps, std::function<void()> action,
                std::uint64_t duration_ns);

  bool done(op_id id) const noexcept;
  bool device_idle(int device) const noexcept;
  std::uint64_t now_ns() const noexcept { return clock_ns_; }
  std::uint64_t pending() const noexcept { return pending_.size(); }

  // A progress point (see the Note).
  void progress();
  // The host blocks until `condition` holds; throws cuda_error naming
  // `what` if no runnable op is left and it still does not hold.
  void run_until(const std::function<bool()>& condition, std::string_view what);

 private:
  struct op {
    std::function<void()> action;
    std::uint64_t duration_ns = 0;
    int device = 0;
    std::uint32_t remaining = 0;  // incomplete dependencies
    std::vector<op_id> dependents;
  };

  void run_one();

  sim_policy policy_;
  unsigned progress_per_mille_;
  sim_random random_;
  op_id next_id_ = 1;
  std::uint64_t clock_ns_ = 0;
  std::unordered_map<op_id, op> pending_;
  std::vector<op_id> runnable_;
  std::vector<std::uint64_t> pending_per_device_;
};

}  // namespace streamsan::rt::sim
