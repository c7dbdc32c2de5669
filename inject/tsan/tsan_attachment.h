// What the injection session does with ThreadSanitizer (docs/tsan-bridge.md):
// when the program carries a usable TSan runtime, a bridge observes the
// live engine and markers bracket the program's host functions; a runtime
// that is refused is said once, in one line, and nothing else changes.
#pragma once

#include <memory>
#include <string_view>

#include "inject/model/cuda_model.h"
#include "inject/tsan/host_function_markers.h"
#include "sanitizer/engine/engine.h"
#include "sanitizer/tsan/tsan_bridge.h"

namespace streamsan::injection {

class tsan_attachment {
 public:
  // Probes the process; attaches to `eng` and `model` when TSan is usable
  // and `enabled`. Both must outlive the attachment.
  tsan_attachment(engine& eng, cuda_model& model, bool enabled);
  ~tsan_attachment();
  tsan_attachment(const tsan_attachment&) = delete;
  tsan_attachment& operator=(const tsan_attachment&) = delete;

  bool active() const noexcept { return bridge_ != nullptr; }
  // Whether the process carries a ThreadSanitizer runtime (usable or not).
  bool runtime_found() const noexcept { return runtime_found_; }
  // Replays work still deferred behind host functions that never ran
  // (process exit), so that TSan checks it against the host.
  void finish() noexcept;
  // "tsan bridge: ..." counters for STREAMSAN_DEBUG=1; empty when off.
  std::string debug_counters() const;

 private:
  engine& engine_;
  cuda_model& model_;
  std::unique_ptr<tsan::tsan_bridge> bridge_;
  std::unique_ptr<host_function_markers> markers_;
  bool runtime_found_ = false;
};

}  // namespace streamsan::injection
