// Starting a thread of the library's own inside the program's process.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace streamsan {

// Note [Threads of our own take no signals]
// A thread of ours takes none of the program's signals: a signal sent to
// the process goes to one of the program's threads, as without us (a
// program that sigwait()s in one thread blocks them in the others it made,
// not in ours). Only the faults it could raise itself stay unblocked, so
// that a crash on it still reaches the fatal-signal handler, and SIGPROF:
// a sampling profiler's process CPU-time timer signals the thread that
// spends the time, so an engine thread busy for minutes shows up in the
// program's profile as itself instead of being charged to a thread of the
// program that happened to take the signal (or not at all). The mask is
// set around the thread's creation, which it inherits.
template <class Body>
std::thread start_library_thread(const char* name, Body&& body) {
  sigset_t all, before;
  sigfillset(&all);
  for (const int kept : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGPROF}) sigdelset(&all, kept);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  std::thread t(std::forward<Body>(body));
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  ::pthread_setname_np(t.native_handle(), name);
  return t;
}

}  // namespace streamsan
