#include "runtime/sim/scheduler.h"

#include <algorithm>
#include <exception>
#include <iostream>
#include <string>

#include "runtime/errors.h"
#include "sanitizer/tsan/active_bridge.h"

namespace streamsan::rt::sim {

scheduler::scheduler(const sim_options& options, int device_count)
    : policy_(options.policy),
      progress_per_mille_(options.progress_per_mille),
      random_(options.seed),
      pending_per_device_(static_cast<std::size_t>(device_count), 0) {}

op_id scheduler::enqueue(int device, std::span<const op_id> deps, std::function<void()> action,
                         std::uint64_t duration_ns) {
  const op_id id = next_id_++;
  op o{std::move(action), duration_ns, device, 0, {}};
  for (const auto dep : deps) {
    const auto it = pending_.find(dep);
    if (it == pending_.end()) continue;  // 0, or already complete
    auto& dependents = it->second.dependents;
    if (std::find(dependents.begin(), dependents.end(), id) != dependents.end()) continue;
    dependents.push_back(id);
    ++o.remaining;
  }
  if (o.remaining == 0) runnable_.push_back(id);
  pending_.emplace(id, std::move(o));
  ++pending_per_device_[static_cast<std::size_t>(device)];
  return id;
}

bool scheduler::done(op_id id) const noexcept { return id == 0 || !pending_.contains(id); }

bool scheduler::device_idle(int device) const noexcept {
  return pending_per_device_[static_cast<std::size_t>(device)] == 0;
}

void scheduler::progress() {
  switch (policy_) {
    case sim_policy::eager:
      while (!runnable_.empty()) run_one();
      return;
    case sim_policy::random:
      while (!runnable_.empty() && random_.below(1000) < progress_per_mille_) run_one();
      return;
  }
}

void scheduler::poll() {
  if (!runnable_.empty()) run_one();
}

void scheduler::run_until(const std::function<bool()>& condition, std::string_view what) {
  while (!condition()) {
    if (runnable_.empty()) {
      throw cuda_error(error_code::unknown, what,
                       "the simulated device has no runnable work left but the awaited work "
                       "has not completed (deadlock)");
    }
    run_one();
  }
}

void scheduler::run_one() {
  std::size_t index = 0;
  switch (policy_) {
    case sim_policy::eager:
      index = static_cast<std::size_t>(
          std::min_element(runnable_.begin(), runnable_.end()) - runnable_.begin());
      break;
    case sim_policy::random:
      index = static_cast<std::size_t>(random_.below(runnable_.size()));
      break;
  }
  const op_id id = runnable_[index];
  runnable_[index] = runnable_.back();
  runnable_.pop_back();

  auto node = pending_.extract(id);
  op& o = node.mapped();
  clock_ns_ += o.duration_ns;
  if (o.action) {
    // A host function that throws must not unwind through the scheduler
    // into an unrelated API call; CUDA has no way to report it either.
    try {
      // Device work done by the host thread: a ThreadSanitizer bridge told
      // TSan about it on the stream's fiber already (a host function's body
      // switches to a fiber of its own).
      const tsan::simulated_device_scope device_work;
      o.action();
    } catch (const std::exception& e) {
      std::cerr << "streamsan: sim: an operation on the simulated device threw: " << e.what()
                << '\n';
    }
  }
  --pending_per_device_[static_cast<std::size_t>(o.device)];
  for (const auto dependent : o.dependents) {
    auto& d = pending_.at(dependent);
    if (--d.remaining == 0) runnable_.push_back(dependent);
  }
}

}  // namespace streamsan::rt::sim
