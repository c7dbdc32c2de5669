// The ThreadSanitizer runtime of the process, found at run time: a program
// built with -fsanitize=thread (GCC or Clang, any build system) carries one,
// either as libtsan.so (GCC), libclang_rt.tsan*.so (clang -shared-libsan) or
// linked into the executable (Clang's default, which exports its interface
// from the executable). Nothing is linked against it: streamsan looks its
// entry points up, so the same library works with and without TSan.
//
// Note [TSan interface versions]
// The entry points the bridge calls are the public interface of
// compiler-rt's include/sanitizer/tsan_interface.h and
// tsan_interface_atomic.h: fibers (since LLVM 8 and GCC 9), __tsan_acquire /
// __tsan_release, range accesses, the function entry/exit of the shadow
// stack, thread ignores and the 64-bit atomic store. Their signatures have
// not changed since they appeared; what changes is the runtime behind them,
// and GCC versions that by the soname of libtsan: libtsan.so.0 (GCC 9 to
// 11, the old runtime) and libtsan.so.2 (GCC 12 on, the new one; .so.1 was
// never released). Clang's runtime is unversioned: it is the one its
// compiler was built with, and is checked by its entry points alone. The
// bridge is written against interface version 1: exactly these entry points
// with these signatures. A runtime that lacks one, or a libtsan whose soname
// names a version this bridge does not know, is refused with one line; the
// bridge stays off and the program runs as it would without streamsan's
// help (probe_tsan_runtime). Optional entry points (the _pc range accesses,
// fiber names) are used when present.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace streamsan::tsan {

// The interface this bridge is written against (Note [TSan interface versions]).
inline constexpr int bridge_interface_version = 1;

// __tsan_switch_to_fiber's flag: switch without a happens-before edge.
inline constexpr unsigned switch_no_sync = 1u << 0;
// __tsan_memory_order_release (tsan_interface_atomic.h).
inline constexpr int memory_order_release = 3;

// The entry points, as function pointers. Filled from the process by
// probe_tsan_runtime, or by a test with a model of ThreadSanitizer.
struct tsan_api {
  void* (*get_current_fiber)() = nullptr;
  void* (*create_fiber)(unsigned flags) = nullptr;
  void (*destroy_fiber)(void* fiber) = nullptr;
  void (*switch_to_fiber)(void* fiber, unsigned flags) = nullptr;
  void (*set_fiber_name)(void* fiber, const char* name) = nullptr;  // optional
  void (*acquire)(void* address) = nullptr;
  void (*release)(void* address) = nullptr;
  // __tsan_atomic64_store(volatile __tsan_atomic64*, __tsan_atomic64, __tsan_memory_order)
  void (*atomic64_store)(volatile long long* address, long long value, int order) = nullptr;
  void (*read_range)(void* address, unsigned long size) = nullptr;
  void (*write_range)(void* address, unsigned long size) = nullptr;
  void (*read_range_pc)(void* address, unsigned long size, void* pc) = nullptr;   // optional
  void (*write_range_pc)(void* address, unsigned long size, void* pc) = nullptr;  // optional
  void (*func_entry)(void* pc) = nullptr;
  void (*func_exit)() = nullptr;
  void (*ignore_thread_begin)() = nullptr;
  void (*ignore_thread_end)() = nullptr;
};

enum class probe_status : std::uint8_t {
  absent,   // no ThreadSanitizer in the process: nothing to say
  refused,  // found, but not usable: `message` says why, in one line
  usable,
};

struct probe_result {
  probe_status status = probe_status::absent;
  tsan_api api;
  // Where the runtime lives: "libtsan.so.2 (GCC)", "the executable (a
  // static runtime)", ...
  std::string runtime;
  // refused: "streamsan: ... ; the ThreadSanitizer bridge stays off".
  std::string message;
};

// How the probe sees the process: a symbol's address (nullptr when
// missing), the file of the module that holds an address, and the
// executable's file (both as real paths).
struct symbol_source {
  std::function<void*(const char* name)> find;
  std::function<std::string(const void* address)> module_of;
  std::function<std::string()> executable;
};

// dlsym(RTLD_DEFAULT) and dladdr: the process itself.
symbol_source process_symbols();

// Looks for ThreadSanitizer (its __tsan_init) and checks it against
// bridge_interface_version.
probe_result probe_tsan_runtime(const symbol_source& symbols = process_symbols());

// "libtsan.so.2" -> 2; -1 when `module` is not a GCC libtsan.
int libtsan_soname_version(std::string_view module);

}  // namespace streamsan::tsan
