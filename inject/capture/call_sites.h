// Where a call came from: the stack capture a source provides to the
// handlers.
#pragma once

#include <cstdint>
#include <span>

#include "inject/model/cuda_model.h"
#include "sanitizer/log/interpreter_frame.h"

namespace streamsan::injection {

class python_frames;

class call_site_source {
 public:
  virtual ~call_site_source() = default;
  // The calling thread's application frames, innermost first; valid until
  // the next capture on this thread. `path_key` names the callback path
  // (Note [Path cache] in inject/stack/fast_unwinder.h); 0 for none.
  virtual call_site capture(std::uint64_t path_key) noexcept = 0;
};

// Note [Interpreter frames]
// In a Python program the native stack at a CUDA call is dozens of frames of
// libtorch and the interpreter, and says nothing about the user's line. The
// PyTorch support (python/streamsan_torch) hands the thread's Python frames
// over when an operator begins: each (code, line) is defined once as a
// symbol at a synthetic address above the canonical user address range
// (interpreter_frame_address), which no return address can take, and the
// capture returns those frames instead of the native ones, or after them
// when the native frames are asked for (cpp_stacks). The frames last until
// the thread clears them (the operator ended). Where the support set none
// (no operator runs, or a program without torch: CuPy, Triton, numba), the
// thread's Python stack is read from the interpreter at the call (Note
// [Python frames read in place] in inject/stack/python_frames.h), behind
// the native frames, which reports fold unless asked for.
// The calling thread's interpreter frames, innermost first (empty clears).
// At most 64 are kept.
void set_interpreter_frames(std::span<const std::uint32_t> ids) noexcept;

// The caching unwinder of inject/stack, for any source whose callbacks run
// on the application's thread (CUPTI's and the Sanitizer API's do).
class unwinder_call_sites final : public call_site_source {
 public:
  // At most 64 frames are kept.
  // `native_with_interpreter`: native frames stay in front of interpreter
  // frames (Note [Interpreter frames]).
  explicit unwinder_call_sites(unsigned depth, bool native_with_interpreter = false) noexcept;
  call_site capture(std::uint64_t path_key) noexcept override;
  // The interpreter's frames at calls without the PyTorch support's (null:
  // none). Set before the first capture; outlives the captures.
  void read_python_frames(python_frames* reader) noexcept { python_ = reader; }

 private:
  unsigned depth_;
  bool native_with_interpreter_;
  python_frames* python_ = nullptr;
};

// The domains a path key tells apart: the dispatcher's two, then the ones a
// source handles itself.
enum class path_domain : std::uint8_t { runtime = 1, driver = 2, nvtx = 3 };

// One key per callback path: the callback, where in the call it runs, and
// for a driver call nested in a runtime call, the runtime call
// (`enclosing_cbid`, 0 when the call is not nested). Never 0.
constexpr std::uint64_t path_key(path_domain domain, std::uint32_t cbid,
                                 std::uint32_t enclosing_cbid, std::uint32_t site) noexcept {
  const std::uint64_t nested = enclosing_cbid == 0 ? 0 : std::uint64_t{enclosing_cbid} + 1;
  return ((std::uint64_t{static_cast<std::uint8_t>(domain)} << 56) |
          (std::uint64_t{cbid} << 32) | (nested << 2) | site) +
         1;
}

}  // namespace streamsan::injection
