// The bridge of the running session, for the code that runs work on the
// host on the device's behalf and knows nothing of the engine: the
// simulated device (runtime/sim), which runs kernels and copies on the
// calling host thread, and whoever runs host functions (the runtime's
// launch_host_func). Without an active bridge both scopes do nothing.
#pragma once

#include "sanitizer/log/ids.h"
#include "sanitizer/tsan/tsan_bridge.h"

namespace streamsan::tsan {

// Set by tsan_bridge's constructor, cleared by its destructor: one bridge
// per process at a time (the last one made).
tsan_bridge* active_bridge() noexcept;

// The simulated device runs an operation on the calling thread. The bridge
// already told TSan about its accesses on the stream's fiber (Note [Streams
// are fibers]), so TSan must not take them for the thread's own: it ignores
// the thread's accesses inside this scope (__tsan_ignore_thread_begin).
class simulated_device_scope {
 public:
  simulated_device_scope() noexcept;
  ~simulated_device_scope();
  simulated_device_scope(const simulated_device_scope&) = delete;
  simulated_device_scope& operator=(const simulated_device_scope&) = delete;

 private:
  const tsan_api* api_ = nullptr;
};

// Around the body of a host function of `stream`, on the thread that runs
// it (Note [Host functions are real host code]). One that was not
// `announced` to the engine as a host_func record (a graph's host node)
// has no place the bridge knows: its body runs unchecked.
class host_function_body {
 public:
  host_function_body(stream_id stream, bool announced) noexcept;
  ~host_function_body();
  host_function_body(const host_function_body&) = delete;
  host_function_body& operator=(const host_function_body&) = delete;

 private:
  tsan_bridge* bridge_ = nullptr;
  host_function_ticket ticket_;
};

}  // namespace streamsan::tsan
