// How many threads have a thread-local state set (Note [A thread-local
// looked at only when it can hold something]).
#pragma once

#include <atomic>
#include <cstdint>

namespace streamsan {

// Note [A thread-local looked at only when it can hold something]
// In the library the driver dlopens, each thread_local costs a call to
// __tls_get_addr (Note [One look at the thread's state] in
// thread_state_ref.h), and a steady launch of the default mode looked up
// several that could hold nothing: the tracker's handed table (only a
// measured launch gets one), the model's operator state (only the PyTorch
// support opens operators), the launch the model expects to be measured,
// and the resolver's awaited token. Each now has a process-wide count of
// the threads whose state is set, and is looked up only when that count is
// not zero. A thread raises the count before it sets its own state and
// lowers it after clearing it, so a thread whose state is set always sees a
// count of at least one (its own writes, in its program order: relaxed is
// enough); other threads' counts only cost a lookup that finds nothing. An
// attempt to reach these through one initial-exec pointer instead
// (docs/injection.md) could not be kept: a module with any initial-exec
// TLS has all of its TLS put in glibc's static surplus, and ours is 2 KiB,
// so dlopen refused it.
class threads_with_state {
 public:
  // The calling thread's state goes from set (`was`) to set (`is`).
  void changed(bool was, bool is) noexcept {
    if (!was && is) count_.fetch_add(1, std::memory_order_relaxed);
    if (was && !is) count_.fetch_sub(1, std::memory_order_relaxed);
  }
  // No thread's state is set; the calling thread's is not, for certain.
  bool none() const noexcept { return count_.load(std::memory_order_relaxed) == 0; }

 private:
  std::atomic<std::uint32_t> count_{0};
};

}  // namespace streamsan
