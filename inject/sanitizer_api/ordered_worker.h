// A thread of the library's own that runs jobs one at a time, in the order
// they were handed over (Note [Decoded on a thread of its own] in
// launch_tracker.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
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
  // with the first. In a forked child, which has no copy of the thread
  // (Note [A forked child has none of our threads] in
  // sanitizer/log/process_owner.h), the job runs at once on the caller.
  // Either way it runs through run_here().
  void submit(std::function<void()> job);
  // Runs `job` on the calling thread now. A job should catch what it can
  // handle itself (Note [A decoding job that throws] in launch_tracker.cpp);
  // what still escapes is the last resort's: counted, its message kept,
  // never propagated, and the next job runs.
  template <class Job>
  void run_here(Job& job) noexcept {
    try {
      job();
    } catch (const std::exception& e) {
      job_failed(e.what());
    } catch (...) {
      job_failed(nullptr);
    }
  }
  // Returns once every job handed over before the call has run.
  void wait_idle();
  // wait_idle(), or false once `deadline` has passed first.
  bool wait_idle_until(std::chrono::steady_clock::time_point deadline);
  // Jobs handed over and not yet run, the running one included.
  std::size_t pending() const;
  // Jobs the last resort caught, and the first one's message ("" if none).
  std::uint64_t failures() const noexcept { return failures_.load(std::memory_order_acquire); }
  std::string first_failure() const;

 private:
  void run();
  void job_failed(const char* what) noexcept;

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
  // Taken without mutex_: a forked child's submit may find it held by a
  // thread the child has not got. The first failure writes the message,
  // then publishes it.
  std::atomic<std::uint64_t> failures_{0};
  char first_failure_[256] = {};
  std::atomic<bool> first_failure_written_{false};
};

}  // namespace streamsan::sanitizer_api
