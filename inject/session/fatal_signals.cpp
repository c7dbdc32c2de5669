#include "inject/session/fatal_signals.h"

#include "inject/session/fault_location.h"

#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iterator>

namespace streamsan::injection {
namespace {

constexpr int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
// Taken only while the program leaves them to their default action
// (Note [Reports when the program dies]).
constexpr int termination_signals[] = {SIGTERM, SIGINT};

struct sigaction previous[NSIG];
std::atomic<last_words_fn> last_words{nullptr};
std::atomic<int> dying{0};  // the first fatal signal, 0 before
std::atomic<pid_t> speaker{0};  // the thread saying the last words
std::atomic<bool> spoken{false};  // the last words are said
std::atomic<int> deferred{0};  // a signal to raise once the report is made

// Only async-signal-safe calls from here on.
void say(const char* text) noexcept {
  std::size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

const char* signal_name(int sig) noexcept {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV (segmentation fault)";
    case SIGBUS: return "SIGBUS (bus error)";
    case SIGILL: return "SIGILL (illegal instruction)";
    case SIGFPE: return "SIGFPE (arithmetic exception)";
    case SIGABRT: return "SIGABRT (abort)";
    case SIGTERM: return "SIGTERM (termination request)";
    case SIGINT: return "SIGINT (interrupt)";
    default: return "a fatal signal";
  }
}

// The program dies by `sig` as it would have without us.
void die_by(int sig) noexcept {
  ::sigaction(sig, &previous[sig], nullptr);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, sig);
  ::raise(sig);
  ::pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
}

// finish() did not come back in time: end with the original signal, its
// default action (its own handler might not end the program).
void on_alarm(int) noexcept {
  const int sig = dying.load();
  say("streamsan: the report could not be completed in time\n");
  previous[sig].sa_handler = SIG_DFL;
  previous[sig].sa_flags = 0;
  die_by(sig);
  ::_exit(128 + sig);
}

// A fault an instruction made comes again once the handler returns; any
// other signal (sent, raised, abort(), a terminal's ^C, which the kernel
// sends with a positive si_code too) must be raised again.
bool comes_again(int sig, const siginfo_t* info) noexcept {
  const bool fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
  return fault && info != nullptr && info->si_code > 0;
}

// Note [A second signal waits for the last words]
// `timeout` sends its SIGTERM to the whole process group, and `streamsan
// run` passes the one it gets on to the program too, so a program gets
// two; a batch system may signal every process twice. Each is process-
// directed: the kernel gives the second to any thread that does not block
// it, which is not the one in the handler. That thread used to restore the
// default action and raise the signal, which ended the process while the
// first was still writing the report: on an H200 every run that `timeout`
// stopped lost its report this way. So a signal that finds another thread
// saying the last words waits until they are said (the alarm bounds them),
// then goes on as it would have. On the speaking thread itself a signal
// (a fault in the report's own code, a ^C while it prints) ends the
// process at once, as before, except while that thread's report was
// deferred to the program's exit (Note [A signal while the report is
// made] in session.cpp): a signal sent then returns to that report, which
// the deferred signal ends. Returns whether the signal is to be let go.
bool wait_for_the_last_words(int sig, const siginfo_t* info) noexcept {
  const pid_t me = static_cast<pid_t>(::syscall(SYS_gettid));
  if (speaker.load() == me) return deferred.load() != 0 && !comes_again(sig, info);
  const struct timespec pause {0, 1'000'000};
  while (!spoken.load()) ::nanosleep(&pause, nullptr);
  return false;
}

void on_fatal(int sig, siginfo_t* info, void* ucontext) noexcept {
  // A signal sent (SIGTERM, SIGINT) may come between a call and the
  // program's read of its errno; the report's writes must not change it.
  const int saved_errno = errno;
  int none = 0;
  if (dying.compare_exchange_strong(none, sig)) {
    speaker.store(static_cast<pid_t>(::syscall(SYS_gettid)));
    say("streamsan: the program received ");
    say(signal_name(sig));
    say("; what streamsan found until then follows\n");
    // The alarm bounds what follows: saying where a fault happened takes
    // the loader's lock (Note [Where a fault happened]), the report our own.
    struct sigaction alarm {};
    alarm.sa_handler = on_alarm;
    ::sigaction(SIGALRM, &alarm, nullptr);
    ::alarm(last_words_seconds);
    if (comes_again(sig, info)) say_fault_location(info, ucontext, say);
    if (const last_words_fn words = last_words.load()) {
      ::alarm(last_words_seconds);
      const bool said = words();
      if (!said && !comes_again(sig, info)) {
        // The report goes on on this thread once this handler returns,
        // still bounded by the alarm; a signal on another thread meanwhile
        // waits for it (spoken is set by raise_deferred_signal).
        ::alarm(last_words_seconds);
        deferred.store(sig);
        errno = saved_errno;
        return;
      }
    }
    ::alarm(0);
    spoken.store(true);
  } else if (wait_for_the_last_words(sig, info)) {
    errno = saved_errno;
    return;
  }
  // Restored: a fault happens again when the handler returns, and is then
  // the program's (or the default's); a signal sent or raised (abort()) is
  // raised again and delivered once this handler returns.
  ::sigaction(sig, &previous[sig], nullptr);
  if (!comes_again(sig, info)) ::raise(sig);
  errno = saved_errno;
}

}  // namespace

void raise_deferred_signal() noexcept {
  if (const int sig = deferred.exchange(0)) {
    spoken.store(true);
    die_by(sig);
  }
}

void install_fatal_signal_handlers(last_words_fn words) noexcept {
  last_words_fn none = nullptr;
  if (!last_words.compare_exchange_strong(none, words)) return;
  warm_fault_location();
  struct sigaction action {};
  action.sa_sigaction = on_fatal;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  for (const int sig : fatal_signals) ::sigaction(sig, &action, &previous[sig]);
  for (const int sig : termination_signals) {
    struct sigaction now {};
    if (::sigaction(sig, nullptr, &now) != 0) continue;
    const bool by_default = (now.sa_flags & SA_SIGINFO) == 0 && now.sa_handler == SIG_DFL;
    if (by_default) ::sigaction(sig, &action, &previous[sig]);
  }
}

}  // namespace streamsan::injection
