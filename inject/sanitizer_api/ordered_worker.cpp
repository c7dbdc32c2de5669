#include "inject/sanitizer_api/ordered_worker.h"

#include <cstdio>
#include <utility>

#include "sanitizer/log/library_thread.h"

namespace streamsan::sanitizer_api {

ordered_worker::~ordered_worker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (!thread_.joinable()) return;
  if (owner_.forked() || thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

// The worker takes none of the program's signals (Note [Threads of our own
// take no signals] in sanitizer/log/library_thread.h).
void ordered_worker::submit(std::function<void()> job) {
  if (owner_.forked()) {
    run_here(job);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
    if (!thread_.joinable()) {
      owner_.claim();
      thread_ = start_library_thread("streamsan-decode", [this] { run(); });
    }
  }
  changed_.notify_all();
}

void ordered_worker::wait_idle() {
  if (owner_.forked()) return;
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return jobs_.empty() && !running_; });
}

bool ordered_worker::wait_idle_until(std::chrono::steady_clock::time_point deadline) {
  if (owner_.forked()) return true;
  std::unique_lock lock(mutex_);
  return changed_.wait_until(lock, deadline, [this] { return jobs_.empty() && !running_; });
}

std::size_t ordered_worker::pending() const {
  std::lock_guard lock(mutex_);
  return jobs_.size() + (running_ ? 1 : 0);
}

void ordered_worker::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    running_ = true;
    lock.unlock();
    run_here(job);
    lock.lock();
    running_ = false;
    changed_.notify_all();
  }
}

void ordered_worker::job_failed(const char* what) noexcept {
  if (failures_.fetch_add(1, std::memory_order_acq_rel) != 0) return;
  std::snprintf(first_failure_, sizeof first_failure_, "%s",
                what != nullptr ? what : "an exception that is not a std::exception");
  first_failure_written_.store(true, std::memory_order_release);
}

std::string ordered_worker::first_failure() const {
  if (!first_failure_written_.load(std::memory_order_acquire)) return {};
  return first_failure_;
}

}  // namespace streamsan::sanitizer_api
