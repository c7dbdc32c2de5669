// One sanitized process: the options, the recorder with its sinks (the live
// engine, optionally a trace writer), the model, the dispatcher and its CUPTI
// source, and
// the report printed at exit.
//
// Note [Reports at exit]
// The report is printed by an atexit handler that the session registers when
// the driver initializes it (at cuInit, so after the CUDA runtime registered
// its own teardown, which therefore runs later). The handler first stops the
// callbacks, so that the runtime's teardown is not taken for the program's
// doing, then applies suppressions, prints, closes the trace and appends the
// "finished" line of Note [The result file]. halt_on_error does the same from
// the diagnostic callback and ends the process with error_exitcode.
#pragma once

#include <atomic>
#include <memory>
#include <optional>

#include "inject/capture/call_sites.h"
#include "inject/capture/dispatcher.h"
#include "inject/cupti/cupti_subscriber.h"
#include "inject/driver/cuda_driver_queries.h"
#include "inject/model/cuda_model.h"
#include "inject/session/options.h"
#include "sanitizer/engine/engine.h"
#include "sanitizer/log/recorder.h"
#include "sanitizer/log/trace_writer.h"
#include "sanitizer/report/suppressions.h"

namespace streamsan::injection {

class session {
 public:
  // Starts the process's session once (later calls return it). On bad
  // options it prints why and ends the process: running unsanitized while
  // the user believes otherwise would be worse.
  static session& start();
  // The running session, or nullptr before start().
  static session* current() noexcept;

  // The driver is loaded (InitializeInjection, from cuInit): resolve its
  // entry points, hide its frames and subscribe to the callbacks. Ends the
  // process if it cannot.
  void cuda_initialized();
  // NVTX initialized first (InitializeInjectionNvtx2): subscribe now if
  // CUPTI allows it before cuInit, else cuda_initialized() will.
  void try_subscribe() noexcept;

  cuda_model& model() noexcept { return model_; }
  // The calling thread's stack (outside callbacks: annotations).
  call_site capture_call_site() noexcept { return call_sites_.capture(0); }
  const sanitizer_options& options() const noexcept { return options_; }

  // Prints the report and records the result; idempotent.
  void finish() noexcept;

  session(const session&) = delete;
  session& operator=(const session&) = delete;

 private:
  explicit session(sanitizer_options options);
  void on_diagnostic(const diagnostic& d);
  // Returns the number of diagnostics left after suppressions.
  std::uint64_t print_report() noexcept;
  void write_result(std::uint64_t diagnostics) noexcept;

  sanitizer_options options_;
  suppressions suppressions_;
  recorder recorder_;
  engine engine_;
  std::unique_ptr<trace_writer> trace_;
  std::unique_ptr<record_sink> debug_dump_;  // STREAMSAN_DEBUG=2
  cuda_driver_queries driver_;
  cuda_model model_;
  unwinder_call_sites call_sites_;
  api_dispatcher dispatcher_;
  cupti_subscriber callbacks_;
  std::atomic<bool> finished_{false};
};

}  // namespace streamsan::injection
