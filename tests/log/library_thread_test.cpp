#include "sanitizer/log/library_thread.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

namespace streamsan {
namespace {

// The mask the body saw on the library's thread.
sigset_t mask_on_library_thread() {
  sigset_t seen;
  sigemptyset(&seen);
  start_library_thread("mask-probe", [&] { ::pthread_sigmask(SIG_SETMASK, nullptr, &seen); })
      .join();
  return seen;
}

// Note [Threads of our own take no signals]
TEST(LibraryThread, BlocksTheProgramsSignals) {
  const sigset_t seen = mask_on_library_thread();
  for (const int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD, SIGPIPE}) {
    EXPECT_EQ(sigismember(&seen, sig), 1) << "signal " << sig;
  }
}

TEST(LibraryThread, LeavesFaultsAndTheProfilersSignalUnblocked) {
  const sigset_t seen = mask_on_library_thread();
  for (const int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGPROF}) {
    EXPECT_EQ(sigismember(&seen, sig), 0) << "signal " << sig;
  }
}

TEST(LibraryThread, LeavesTheCallersMaskAsItWas) {
  sigset_t before, after;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &before);
  start_library_thread("mask-probe", [] {}).join();
  ::pthread_sigmask(SIG_SETMASK, nullptr, &after);
  for (int sig = 1; sig < NSIG; ++sig) {
    EXPECT_EQ(sigismember(&before, sig), sigismember(&after, sig)) << "signal " << sig;
  }
}

}  // namespace
}  // namespace streamsan
