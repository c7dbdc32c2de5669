#include "inject/model/concurrency_watch.h"

namespace streamsan::injection {

// Note [First launches are measured once work can overlap]
bool concurrency_watch::stream_added(std::int32_t device, stream_flavor flavor) noexcept {
  if (overlap_possible()) return false;
  if (device_ && *device_ != device) return turn_on();
  device_ = device;
  switch (flavor) {
    case stream_flavor::legacy_default:
      return false;
    case stream_flavor::non_blocking:
      return turn_on();
    case stream_flavor::blocking:
    case stream_flavor::per_thread_default:
      return ++ordered_streams_ > 1 && turn_on();
  }
  return turn_on();  // a flavor this watch does not know: assume the worst
}

bool concurrency_watch::turn_on() noexcept {
  return !possible_.exchange(true, std::memory_order_acq_rel);
}

}  // namespace streamsan::injection
