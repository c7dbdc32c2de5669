// Call-stack capture cheap enough to run on every CUDA API call.
//
// Note [Why a caching unwinder]
// A CUPTI callback runs some ten frames below the application's call (inside
// the CUDA runtime, the driver and CUPTI). The generic DWARF unwinder
// (_Unwind_Backtrace, which Boost.Stacktrace uses) parses the unwind tables
// of every frame again on every call: about 0.13 µs a frame here, several µs
// a call, which is more than an empty kernel launch costs. The call sites of
// a program are few and repeat, so this unwinder evaluates the DWARF call
// frame program once per return address, keeps the resulting rule ("the CFA
// is rsp+N or rbp+N; the return address and the caller's rbp are saved at
// CFA+M") in a per-thread table, and afterwards walks a frame with one table
// probe and two loads. Reads are bounded by the thread's stack, so a wrong
// rule cannot fault. Frames whose unwind rule is not of that simple shape
// (signal trampolines, stack realignment) make that one capture fall back to
// _Unwind_Backtrace.
//
// Note [Stack scanning]
// A frame of an internal module that has no unwind information (a stripped
// driver, say) would end the walk before any application frame. Then the
// stack above it is scanned for the first word that is a return address
// into a non-internal module (its code has unwind information and the bytes
// before it are a call instruction), and the walk resumes there, as
// crash reporters do. Only the frames below the first application frame are
// ever skipped this way.
//
// Note [Path cache]
// Even cached, walking the driver's and CUPTI's frames costs more than the
// rest of a call's modelling together (dozens of frames below a callback).
// But for one CUPTI callback (domain, API, enter/exit, the runtime call it is
// nested in) the internal frames between the application's call and the
// capture are the same every time, so their total size is too. The first
// capture on a path records where the first application frame's return
// address (and saved rbp) lie relative to the capture's own stack pointer;
// later captures on that path read them there and walk only the
// application's frames. The word found there must be code that follows a
// call instruction, outside the internal modules, and the return address
// read just before it when the path was learned (into the innermost
// internal frame) must still be code inside an internal module, or the path
// is walked in full and learned again (a first call that runs the runtime's
// lazy initialization takes a longer path than the calls after it; a
// driver launch the program makes and one the runtime makes for <<<>>>
// share a key, Note [Launches without their runtime callback]).
//
// Frames inside the "internal" modules (the CUDA driver, CUPTI, this
// library, a shared CUDA runtime) and inside the statically linked CUDA
// runtime's private functions are dropped: a report shows the application's
// frames, starting at the CUDA API function it called.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace streamsan::injection {

struct unwinder_stats {
  std::uint64_t captures = 0;
  std::uint64_t slow_captures = 0;  // fell back to _Unwind_Backtrace
  std::uint64_t rules_computed = 0;
  // Internal frames without unwind information (Note [Stack scanning]).
  std::uint64_t scans = 0;
  // Note [Path cache]
  std::uint64_t path_hits = 0;
  std::uint64_t path_misses = 0;
  // Note [A repeated walk is read back]: path hits whose whole walk was
  // the last one's.
  std::uint64_t walks_read_back = 0;
};

// Modules whose frames are never shown. Called once, before capturing;
// matches a loaded object when its path contains one of `name_parts`.
void set_internal_modules(std::span<const std::string_view> name_parts);

// Decides per return address whether a frame of the main program belongs to
// the statically linked CUDA runtime (by its symbol name).
void set_hide_static_cudart(bool hide);

// Note [The unwinder's state in the caller's thread_local]
// In libstreamsan_inject.so, which the driver dlopens, each thread_local
// costs a call to __tls_get_addr, and a capture through
// unwinder_call_sites looked two up: its own (the frames it returns) and
// the unwinder's (the pointer to the thread's state). A caller with a
// thread_local of its own keeps that pointer there instead, in an
// unwinder_slot: the capture fills it from the unwinder's own at the
// thread's first capture through it, and the unwinder empties it when it
// frees the state (Note [Per-thread state outlives the thread's
// thread_locals]), so a later capture fills it with the new state. A slot
// belongs to one thread, and a thread has at most one.
struct unwinder_slot {
  void* state = nullptr;  // the unwinder's, opaque
};

// Writes up to out.size() return addresses, innermost first, of the calling
// thread's application frames; returns how many were written. `path_key`
// (0: none) names the call path from the application to this call, see
// Note [Path cache]. `slot`: the calling thread's, if it keeps one.
std::size_t capture_stack(std::span<std::uint64_t> out, std::uint64_t path_key = 0,
                          unwinder_slot* slot = nullptr) noexcept;

// The same through _Unwind_Backtrace only (for tests and comparison).
std::size_t capture_stack_slow(std::span<std::uint64_t> out) noexcept;

// This thread's counters.
unwinder_stats current_thread_unwinder_stats() noexcept;
// Every thread's counters, summed: those that ended and those that live
// (read while they may still count).
unwinder_stats all_threads_unwinder_stats() noexcept;

// Threads whose unwinder state is allocated: those that captured and have
// not ended (the main thread's state lives until the process ends).
std::size_t live_unwinder_states() noexcept;

}  // namespace streamsan::injection
