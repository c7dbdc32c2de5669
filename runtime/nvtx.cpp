#include "runtime/nvtx.h"

#include <iostream>
#include <mutex>

#include "runtime/session/session.h"

namespace streamsan::rt::nvtx {

void range_push(std::string_view message) {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  s.device->nvtx_push(message);
  ++s.thread().nvtx_depth;
  if (s.logging()) s.emit(nvtx_push{s.intern(message)});
}

void range_pop() {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  auto& depth = s.thread().nvtx_depth;
  if (depth == 0) throw usage_error("nvtx::range_pop: the calling thread has no open range");
  s.device->nvtx_pop();
  --depth;
  if (s.logging()) s.emit(streamsan::nvtx_pop{});
}

void mark(std::string_view message) {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  s.device->nvtx_mark(message);
  if (s.logging()) s.emit(nvtx_mark{s.intern(message)});
}

range::range(std::string_view message) { range_push(message); }

range::~range() noexcept {
  try {
    range_pop();
  } catch (const std::exception& e) {
    std::cerr << "streamsan: closing an NVTX range: " << e.what() << '\n';
  }
}

}  // namespace streamsan::rt::nvtx
