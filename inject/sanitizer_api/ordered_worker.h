// A thread of the library's own that runs jobs one at a time, in the order
// they were handed over (Note [Decoded on a thread of its own] in
// launch_tracker.cpp).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "sanitizer/log/process_owner.h"

namespace streamsan::sanitizer_api {

class ordered_worker {
 public:
  ordered_worker() = default;
  // Runs what was handed over, then joins the thread.
  ~ordered_worker();
  ordered_worker(const ordered_worker&) = delete;
  ordered_worker& operator=(const ordered_worker&) = delete;

  // Queues `job` after every job handed over before it; the thread starts
  // with the first. A job must not throw (what it throws is dropped). In a
  // forked child, which has no copy of the thread (Note [A forked child has
  // none of our threads] in sanitizer/log/process_owner.h), the job runs at
  // once on the caller.
  void submit(std::function<void()> job);
  // Returns once every job handed over before the call has run.
  void wait_idle();
  // Jobs handed over and not yet run, the running one included.
  std::size_t pending() const;

 private:
  void run();

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> jobs_;
  bool running_ = false;  // a job taken from jobs_ is running
  bool stopping_ = false;
  // The process that started the thread. Claimed under mutex_ by the first
  // submit, asked without it: another thread's wait_idle or submit may ask
  // while the first submit claims.
  process_owner owner_;
  std::thread thread_;
};

}  // namespace streamsan::sanitizer_api
