// The synthetic addresses that stand for interpreter (Python) frames in a
// call stack (Note [Interpreter frames] in inject/capture/call_sites.h):
// the capture writes them, reports tell them from native frames (Note
// [Python stacks fold their native frames] in
// sanitizer/report/user_stack.cpp).
#pragma once

#include <cstdint>

namespace streamsan {

// Above the canonical user address range: no return address can take it.
inline constexpr std::uint64_t interpreter_frame_base = 0xFFFF'FF00'0000'0000ull;
constexpr std::uint64_t interpreter_frame_address(std::uint32_t id) noexcept {
  return interpreter_frame_base | id;
}
constexpr bool is_interpreter_frame(std::uint64_t address) noexcept {
  return address >= interpreter_frame_base;
}

}  // namespace streamsan
