// The injection library's side of Note [Host functions are real host code]
// (sanitizer/tsan/tsan_bridge.h): the CUDA driver runs a host function on a
// thread of its own, and nothing tells the library when. So around each
// host function the program enqueues, the library enqueues two of its own
// on the same stream: one before it, which switches the driver's thread to
// the function's fiber (tsan_bridge::begin_host_function), and one after
// it, which switches back. Host functions of one stream run in its order,
// one at a time, on the driver's thread.
//
// Note [The marker waits for the log]
// The marker before the function is enqueued at the call's entry, the
// function is logged at its exit, and the driver may run the marker in
// between: it then waits until the call's exit has logged the function
// (or found that the call failed), at most `wait_limit`; a marker that
// gives up lets the body run as the driver thread's own code (counted).
// Nothing is enqueued on a capturing stream: the markers would become
// nodes of the program's graph (a graph's host nodes run unchecked).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "inject/driver/cuda_driver_queries.h"
#include "inject/model/host_function_listener.h"
#include "sanitizer/tsan/tsan_bridge.h"

namespace streamsan::injection {

struct marker_statistics {
  std::uint64_t bracketed = 0;   // host functions whose bodies ran on their fiber
  std::uint64_t late = 0;        // the marker stopped waiting for the log
  std::uint64_t cancelled = 0;   // the launch failed
  std::uint64_t not_enqueued = 0;  // the driver refused a marker, or the stream captures
};

class host_function_markers final : public host_function_listener {
 public:
  host_function_markers(tsan::tsan_bridge& bridge, marker_driver driver,
                        std::chrono::milliseconds wait_limit = std::chrono::seconds(2));

  void entering(std::uintptr_t stream) override;
  void logged(stream_id stream) override;
  void returned(bool succeeded) override;

  marker_statistics statistics() const noexcept;

  struct token;

 private:
  static void before(void* data);
  static void after(void* data);

  tsan::tsan_bridge& bridge_;
  marker_driver driver_;
  std::chrono::milliseconds wait_limit_;
  std::atomic<std::uint64_t> bracketed_{0}, late_{0}, cancelled_{0}, not_enqueued_{0};
};

}  // namespace streamsan::injection
