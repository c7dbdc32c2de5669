// Which frames of a call stack are the user's: the one table that sorts a
// symbolized frame into the program's own code, the CUDA runtime, nvcc's
// launch stubs, CUPTI, streamsan itself, or the process and thread entry
// machinery below main.
//
// Note [Stacks start at the user]
// A stack captured at a CUDA call starts deep inside the CUDA runtime: on an
// H100 a kernel launch reads, innermost first,
//   cudaLaunchKernel                         (static cudart, in the program)
//   __device_stub__Z6k_readPKfPfi(...)       (nvcc's stub, *.cudafe1.stub.c)
//   cudaError cudaLaunchKernel<char>(...)    (cuda_runtime.h's wrapper)
//   main app.cu:42
//   __libc_start_call_main, __libc_start_main, _start
// Reports fold the frames before the first user frame into one line that
// says what the call was ("launch of k_read<<<…>>> from main at app.cu:42"),
// drop main's callers and a thread's entry frames, and point the SUMMARY at
// the first user frame. Classification needs both the module (a shared
// libcudart, libcuda, libcupti) and the symbol (a statically linked cudart
// lives in the program's own module), so a rule matches either.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "sanitizer/log/log_tables.h"

namespace streamsan {

enum class frame_kind : std::uint8_t {
  user,           // the program's own code
  cuda,           // CUDA runtime, driver, libraries, cuda_runtime.h wrappers, CCCL
  launch_stub,    // nvcc's __device_stub__ functions and launch plumbing
  cupti,          // the CUDA profiling interface (the injection's callbacks)
  streamsan,      // streamsan's runtime, injection library and recorder
  system,         // the C and C++ runtime libraries
  process_entry,  // main's callers: __libc_start_main, _start
  thread_entry,   // a thread's outermost frames: start_thread, clone
};

std::string_view to_string(frame_kind kind) noexcept;

// Frames reports fold away: everything but the user's own code.
constexpr bool is_internal(frame_kind kind) noexcept { return kind != frame_kind::user; }
// Frames at and below which a stack is cut.
constexpr bool is_entry(frame_kind kind) noexcept {
  return kind == frame_kind::process_entry || kind == frame_kind::thread_entry;
}

struct frame_rule {
  enum class field : std::uint8_t {
    module,    // the loaded module's path contains the pattern
    function,  // the function's bare name (frame_base_name) starts with it
    exact,     // the function's bare name equals it
    c_api,     // a C function (no "::") named pattern + an upper-case letter
    instance,  // a template instance (name<...>) whose bare name starts with it
    file,      // the source file's path contains the pattern
  };
  field where;
  std::string_view pattern;
  frame_kind kind;
};

// The rules, tried in order; the first match decides. A frame no rule
// matches is the user's.
std::span<const frame_rule> frame_rules() noexcept;

frame_kind classify_frame(const symbol_info& symbol) noexcept;

// The function's name without return type, parameters and template
// arguments: "cudaError cudaLaunchKernel<char>(char const*, dim3)" ->
// "cudaLaunchKernel", "streamsan::rt::stream::synchronize() const" ->
// "streamsan::rt::stream::synchronize".
std::string_view frame_base_name(std::string_view function) noexcept;

// True for the frame of the program's main function.
bool is_main_frame(const symbol_info& symbol) noexcept;

}  // namespace streamsan
