// A thread of the library's own that runs jobs one at a time, in the order
// they were handed over (Note [Decoded on a thread of its own] in
// launch_tracker.cpp).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

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
  // forked child, which has no copy of the thread, the job runs at once on
  // the caller.
  void submit(std::function<void()> job);
  // Returns once every job handed over before the call has run.
  void wait_idle();
  // Jobs handed over and not yet run, the running one included.
  std::size_t pending() const;

 private:
  void run();
  bool forked() const noexcept;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> jobs_;
  bool running_ = false;  // a job taken from jobs_ is running
  bool stopping_ = false;
  // The process that started the thread. Set under mutex_ by the first
  // submit, read without it by forked(): another thread's wait_idle or
  // submit may ask while the first submit sets it.
  std::atomic<pid_t> owner_{0};
  std::thread thread_;
};

}  // namespace streamsan::sanitizer_api
