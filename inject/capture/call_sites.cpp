#include "inject/capture/call_sites.h"

#include <algorithm>
#include <array>
#include <span>

#include "inject/stack/fast_unwinder.h"
#include "inject/stack/python_frames.h"
#include "sanitizer/log/thread_state_ref.h"

namespace streamsan::injection {
namespace {

constexpr unsigned max_depth = 64;

// One thread_local, looked up once per capture (Note [One look at the
// thread's state]): three of them were three calls to __tls_get_addr at
// every launch in the library.
struct capture_state {
  // The frames of the last capture on this thread (what call_site points to).
  std::array<std::uint64_t, max_depth> frames{};
  // Note [Interpreter frames]
  std::array<std::uint64_t, max_depth> interpreter{};
  std::size_t interpreter_count = 0;
  // Note [The unwinder's state in the caller's thread_local]
  unwinder_slot unwinder;
};
constinit thread_local capture_state this_thread;

}  // namespace

void set_interpreter_frames(std::span<const std::uint32_t> ids) noexcept {
  capture_state& me = thread_state_ref(this_thread);
  me.interpreter_count = std::min<std::size_t>(ids.size(), max_depth);
  for (std::size_t i = 0; i < me.interpreter_count; ++i) {
    me.interpreter[i] = interpreter_frame_address(ids[i]);
  }
}

unwinder_call_sites::unwinder_call_sites(unsigned depth, bool native_with_interpreter) noexcept
    : depth_(std::min(depth, max_depth)), native_with_interpreter_(native_with_interpreter) {}

call_site unwinder_call_sites::capture(std::uint64_t path_key) noexcept {
  if (depth_ == 0) return {};
  capture_state& me = thread_state_ref(this_thread);
  auto& frames = me.frames;
  std::size_t n = 0;
  std::size_t python = std::min<std::size_t>(me.interpreter_count, depth_);
  const std::uint64_t* interpreter = me.interpreter.data();
  std::array<std::uint64_t, max_depth> read;
  bool read_in_place = false;
  if (python == 0 && python_ != nullptr) {
    python = python_->current(std::span<std::uint64_t>(read.data(), depth_));
    interpreter = read.data();
    read_in_place = python > 0;
  }
  // Frames read in place keep the native ones in front: the call site's
  // module decides the library suppressions (Note [Built-in library
  // suppressions]), and reports fold them (Note [Python stacks fold their
  // native frames] in sanitizer/report/user_stack.cpp).
  if (python == 0 || native_with_interpreter_ || read_in_place) {
    // Leave room for the interpreter frames behind the native ones.
    const std::size_t native_room =
        python == 0 ? depth_ : std::max<std::size_t>(depth_ - python, depth_ / 2);
    n = capture_stack(std::span<std::uint64_t>(frames.data(), native_room), path_key,
                      &me.unwinder);
  }
  const std::size_t take = std::min(python, depth_ - n);
  std::copy_n(interpreter, take, frames.begin() + static_cast<std::ptrdiff_t>(n));
  return call_site{std::span<const std::uint64_t>(frames.data(), n + take)};
}

}  // namespace streamsan::injection
