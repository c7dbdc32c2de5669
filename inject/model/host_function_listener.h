// Hears of each host function the program enqueues, around the call that
// enqueues it: the ThreadSanitizer bridge (inject/tsan) brackets the body
// with markers of its own, one enqueued before the function and one after
// (Note [Host functions are real host code] in sanitizer/tsan/tsan_bridge.h).
#pragma once

#include <cstdint>

#include "sanitizer/log/ids.h"

namespace streamsan::injection {

class host_function_listener {
 public:
  virtual ~host_function_listener() = default;
  // At the entry of the call, on the calling thread. `stream` is the handle
  // the driver API would take for it (CU_STREAM_PER_THREAD for the
  // per-thread default stream).
  virtual void entering(std::uintptr_t stream) = 0;
  // The model logged the host function, on `stream` (at the call's
  // successful exit).
  virtual void logged(stream_id stream) = 0;
  // At the call's exit, whatever its outcome, after logged().
  virtual void returned(bool succeeded) = 0;
};

}  // namespace streamsan::injection
