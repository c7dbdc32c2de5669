// The process that started a thread of the library's own, so that a forked
// child can tell it has no copy of that thread.
//
// Note [A forked child has none of our threads]
// fork() copies the calling thread alone. A unit that hands work to a
// thread of its own (queued_sink's consumer, ordered_worker's decoding
// thread) is copied into the child whole: its queue, its std::thread
// object, its flags saying the thread runs; the thread itself is not.
// Waiting there for that thread (for room in a ring, for a queue to empty,
// in a join) would wait for ever, so each such unit remembers the process
// that started its thread and, in any other process, does the thread's
// work on the calling thread and never joins the copied object (the
// details are each unit's: Note [The engine runs on its own thread],
// ordered_worker.h). The pid is an atomic because forked() is asked
// without the unit's lock, possibly by one thread while another starts the
// thread and records it (the data race of 83bbf4e); getpid() is a system
// call, so the question costs one, no lock.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <atomic>

namespace streamsan {

class process_owner {
 public:
  // The calling process starts the thread: called before starting it.
  void claim() noexcept { pid_.store(::getpid(), std::memory_order_release); }
  // Whether the thread was started (claim()) by another process than the
  // calling one: a forked child, which has no copy of it. False before
  // claim().
  bool forked() const noexcept {
    const pid_t owner = pid_.load(std::memory_order_acquire);
    return owner != 0 && ::getpid() != owner;
  }

 private:
  std::atomic<pid_t> pid_{0};
};

}  // namespace streamsan
