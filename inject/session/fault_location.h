// Where a fault happened, said on stderr as the program dies of it.
//
// Note [Where a fault happened]
// A program that dies of SIGSEGV, SIGBUS, SIGILL or SIGFPE under `streamsan
// run` may have crashed in its own code, in a CUDA library, or in ours: our
// capture library or the Compute Sanitizer API's library that it loads (a
// crash inside sanitizerUnpatchModule under examples/programs/module_churn
// on an H200, 2026-11-29, said only "received SIGSEGV"). So the message
// names the object of the faulting instruction and of the return addresses
// below it, as OBJECT+0xOFFSET (`addr2line -f -C -e OBJECT OFFSET` names
// the function where the object has symbols), and says when that object is
// streamsan's, so that the user knows whom to blame and what to send us.
// Not async-signal-safe: backtrace() and dladdr() may take the dynamic
// loader's lock. The process is dying, the alarm of fatal_signals.cpp is
// set before this runs (a fault inside the loader, with its lock held,
// would otherwise hang here), and backtrace() is called once at
// installation so that the unwinder is loaded before any fault.
#pragma once

#include <signal.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace streamsan::injection {

// Who an object belongs to, by its file name.
enum class object_owner : std::uint8_t {
  program,          // the program or any library of its own
  streamsan,        // libstreamsan_inject.so
  sanitizer_api,    // libsanitizer-public.so, loaded by streamsan
};
object_owner owner_of(std::string_view object_path) noexcept;

// Loads the unwinder (backtrace() allocates on its first call).
void warm_fault_location() noexcept;

// Writes, through `write`, where the fault that `info` and `ucontext`
// describe happened: the faulting address, the instruction's object and
// offset, up to `frames` return addresses below it, and who owns the
// instruction's object.
using write_text_fn = void (*)(const char* text) noexcept;
void say_fault_location(const siginfo_t* info, const void* ucontext, write_text_fn write,
                        std::size_t frames = 12) noexcept;

}  // namespace streamsan::injection
