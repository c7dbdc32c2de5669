// What keeps module changes apart from launch calls (Note [The launch
// gate]).
#pragma once

#include <atomic>
#include <cstdint>

namespace streamsan::sanitizer_api {

// Note [The launch gate]
// Every launch call holds `launching` shared from its entry to its exit,
// and a module change takes it exclusive, never waiting for it (Note [A
// module changes only while none of its kernels runs] in
// sanitizer_source.cpp). A std::shared_mutex paid pthread_rwlock_rdlock
// and pthread_rwlock_unlock for it, about 60 instructions a launch on the
// host, over the rwlock's own lines. Nothing here needs what they add
// (a writer that waits, writer preference, timed locks), so the gate is
// one counter: holders shared add one; a change sets the top bit, only
// while the counter is zero (try_lock), and clears it. A holder that
// finds the bit set takes its one back and waits for the change to end
// (a futex wait: a change may last the drain of Note [Waiting for a
// module's streams to drain]). So a launch pays one atomic add at its
// entry and one at its exit. Tests: LaunchGate.*.
class launch_gate {
 public:
  launch_gate() noexcept = default;
  launch_gate(const launch_gate&) = delete;
  launch_gate& operator=(const launch_gate&) = delete;

  void lock_shared() noexcept {
    if (state_.fetch_add(1, std::memory_order_acquire) & changing) [[unlikely]] {
      wait_then_lock_shared();
    }
  }
  void unlock_shared() noexcept { state_.fetch_sub(1, std::memory_order_release); }

  // Exclusive, for std::unique_lock's try_to_lock: fails while anything
  // holds the gate, shared or not.
  bool try_lock() noexcept {
    std::uint32_t idle = 0;
    return state_.compare_exchange_strong(idle, changing, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }
  void unlock() noexcept {
    // Holders that found the change on their way in may still count.
    state_.fetch_sub(changing, std::memory_order_release);
    state_.notify_all();
  }

 private:
  static constexpr std::uint32_t changing = std::uint32_t{1} << 31;

  // Out of line and cold: inlined, the futex wait's setup (the address of
  // libstdc++'s table of waiters, loaded through the GOT) was hoisted above
  // the add, and lock_shared saved four registers, at every launch:
  // lock_shared is now the add, a test and a return
  // (bench/injection/library-instructions.sh: 1,700 -> 1,688 instructions
  // a launch).
  [[gnu::noinline, gnu::cold]] void wait_then_lock_shared() noexcept {
    do {
      unlock_shared();
      wait_for_change();
    } while (state_.fetch_add(1, std::memory_order_acquire) & changing);
  }

  void wait_for_change() noexcept {
    for (std::uint32_t s = state_.load(std::memory_order_acquire); s & changing;
         s = state_.load(std::memory_order_acquire)) {
      state_.wait(s, std::memory_order_acquire);
    }
  }

  std::atomic<std::uint32_t> state_{0};
};

}  // namespace streamsan::sanitizer_api
