#include "runtime/stream_guard.h"

#include "runtime/device.h"
#include "runtime/session/session.h"

namespace streamsan::rt {

stream_guard::stream_guard(stream_ref s) {
  previous_device_ = current_device();
  previous_on_previous_device_ = current_stream(previous_device_);
  previous_on_target_device_ = current_stream(s.device());
  set_stream(s);
}

stream_guard::~stream_guard() noexcept {
  // Restores the thread's state directly: the saved streams may have been
  // destroyed meanwhile, and a destructor must not throw.
  auto* s = existing_session();
  if (s == nullptr || stream_access::session_of(previous_on_target_device_) != s->number) return;
  auto& t = s->thread();
  t.current[static_cast<std::size_t>(previous_on_target_device_.device())] =
      previous_on_target_device_.id();
  t.current[static_cast<std::size_t>(previous_on_previous_device_.device())] =
      previous_on_previous_device_.id();
  t.device = previous_device_;
}

}  // namespace streamsan::rt
