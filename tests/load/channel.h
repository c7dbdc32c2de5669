// A blocking FIFO between host threads, for the load tests' hand-offs
// (runtime_stress.cpp, cuda_stress.cu).
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <utility>

namespace streamsan::load {

template <class T>
class channel {
 public:
  void push(T value) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      items_.push_back(std::move(value));
    }
    ready_.notify_one();
  }
  T pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return !items_.empty(); });
    T value = std::move(items_.front());
    items_.pop_front();
    return value;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<T> items_;
};

}  // namespace streamsan::load
