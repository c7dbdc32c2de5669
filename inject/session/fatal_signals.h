// Note [Reports when the program dies]
// A program that dies by a signal (a segmentation fault, abort(), an
// uncaught C++ exception, which ends in abort()) never runs its atexit
// handlers, so the report the library held (Note [Reports at exit]) would
// be lost with it. The library therefore handles SIGSEGV, SIGBUS, SIGILL,
// SIGFPE and SIGABRT: the first one, on whichever thread, says what
// happened on stderr and runs `last_words` (the session's finish(): the
// report, the trace, the result file); then the signal goes on as it would
// have without us: the previous disposition is restored and the signal
// raised again, so the program still dies by it (or its own handler runs)
// and `streamsan run` tells that death apart from "reports found".
// finish() first lets the engine's thread deliver what is still queued
// (Note [Where the engine runs]); when the signal came on that thread
// itself, the queue is closed instead and what it held is not delivered.
// A finish() that cannot complete (the crash came while a lock of ours was
// held) is cut off after a few seconds by an alarm that ends the program
// with the original signal. SIGTERM and SIGINT (`timeout`, `kill`, ^C)
// end a program the same way when it leaves them to their default action,
// so they are handled too, but only then: a program with a handler of its
// own (a server that shuts down cleanly, a training loop that saves a
// checkpoint) keeps it, or ignores them as it chose, and its report comes
// at its exit as usual. Not covered: a stack overflow (no alternate
// stack), _exit() from a thread, SIGKILL (docs/reliability.md).
#pragma once

namespace streamsan::injection {

// Returns false when the report is being made on this thread already (the
// signal came while the program's exit made it): the signal is then raised
// again by raise_deferred_signal() once the report is made (Note [A signal
// while the report is made]).
using last_words_fn = bool (*)() noexcept;

// Idempotent; the first call's `last_words` stays.
void install_fatal_signal_handlers(last_words_fn last_words) noexcept;

// After a report made at exit: a signal whose last words were deferred ends
// the program now, as it would have.
void raise_deferred_signal() noexcept;

// The seconds finish() gets before the alarm ends the program.
inline constexpr unsigned last_words_seconds = 10;

}  // namespace streamsan::injection
