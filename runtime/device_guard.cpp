#include "runtime/device_guard.h"

#include "runtime/device.h"
#include "runtime/session/session.h"

namespace streamsan::rt {

device_guard::device_guard(int device) {
  if (device < 0) return;  // S-DEV-1: a no-op
  const int previous = current_device();
  set_device(device);
  previous_ = previous;
}

device_guard::~device_guard() noexcept {
  if (previous_ < 0) return;
  // Restores directly: the previous device was valid, and a destructor must
  // not throw if the session ended meanwhile.
  if (auto* s = existing_session(); s != nullptr && previous_ < s->device_count) {
    s->thread().device = previous_;
  }
}

}  // namespace streamsan::rt
