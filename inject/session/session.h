// One sanitized process: the options, the recorder with its sinks (the live
// engine, optionally a trace writer), the model, the dispatcher and its CUPTI
// source, and the report printed at exit. process_session.h makes the
// process's one session; tests make their own over a fake driver and a fake
// CUPTI.
//
// Note [Reports at exit]
// The report is printed by an atexit handler that the process's session
// registers when it starts (at cuInit, so after the CUDA runtime registered
// its own teardown, which therefore runs later). finish() first stops the
// callbacks, so that the runtime's teardown is not taken for the program's
// doing. Callbacks already past that point on other threads may still be
// delivering a record; finish() takes the engine, the trace writer and the
// debug dump off the recorder, which waits for the delivery in progress (the
// recorder's lock) and makes it the last one they see. Only then does it
// read the engine's diagnostics, print, close the trace and append the
// "finished" line of Note [The result file]. Records made later (a thread
// still running while the process exits) reach no sink.
//
// With the engine on its own thread (Note [The engine runs on its own
// thread] in sanitizer/log/queued_sink.h), taking the resolver off the
// recorder makes the delivery in progress the last one queued, and closing
// the queue waits until the engine thread has delivered everything queued.
//
// halt_on_error keeps the engine on the program's threads (Note [Where the
// engine runs]): the engine calls on_diagnostic() during a delivery, under
// the recorder's lock, so nothing else is delivered meanwhile. A suppressed
// diagnostic changes nothing; any other one is printed with the report so
// far, the result is written and the process ends with error_exitcode. A
// finish() on another thread waits on the recorder's lock meanwhile, and
// never runs: the report is printed once.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "inject/capture/call_sites.h"
#include "inject/capture/dispatcher.h"
#include "inject/cupti/cupti_subscriber.h"
#include "inject/model/cuda_model.h"
#include "inject/model/driver_queries.h"
#include "inject/nvtx/nvtx_injection.h"
#include "inject/precise/footprint_resolver.h"
#include "inject/sanitizer_api/sanitizer_source.h"
#include "inject/session/options.h"
#include "inject/stack/python_frames.h"
#include "inject/tsan/tsan_attachment.h"
#include "sanitizer/engine/engine.h"
#include "sanitizer/log/queued_sink.h"
#include "sanitizer/log/recorder.h"
#include "sanitizer/log/trace_writer.h"
#include "sanitizer/report/suppressions.h"

namespace streamsan::injection {

// What a session is told by its environment.
struct session_config {
  sanitizer_options options;
  // STREAMSAN_RESULT_FILE (Note [The result file]); empty: none.
  std::string result_file;
  // STREAMSAN_DEBUG: 1 prints counters at exit, 2 also every record.
  int debug = 0;
  // The ThreadSanitizer bridge in a program built with -fsanitize=thread
  // (docs/tsan-bridge.md); STREAMSAN_TSAN=0 leaves it off.
  bool tsan_bridge = true;
  // The engine, trace writer and debug dump on a thread of their own
  // (Note [Where the engine runs]); STREAMSAN_ENGINE_THREAD=0 keeps them on
  // the program's threads.
  bool engine_thread = true;
  // STREAMSAN_GRAPH_NODES, STREAMSAN_RUNTIME_LAUNCH_CALLBACKS,
  // STREAMSAN_UNPATCH_WAIT_MS.
  library_settings library;
};

// Note [Where the engine runs]
// By default the records go through a queue to a thread of the library's
// own, which feeds the engine, the trace writer and the debug dump (Note
// [The engine runs on its own thread]): the program's thread pays for the
// capture and a copy. Three cases keep the engine on the program's threads,
// inside the recorder's lock:
//  - halt_on_error: the process must end at the first report, before the
//    program goes on (on another thread, the program would run ahead by
//    whatever the queue held, and the report would race with its exit);
//  - the ThreadSanitizer bridge (Note [The ThreadSanitizer bridge needs
//    records at the call]): it mirrors each record on the thread that made
//    the call, while the call is made;
//  - STREAMSAN_ENGINE_THREAD=0, to compare the two.
// What the engine tells the capture side goes on working from its thread:
// a candidate names kernels to measure on their next launches (Note [Which
// launches are measured]), a request the Sanitizer API source takes under
// its own lock, which no producer holds while it records (so a producer
// waiting for room in the queue never waits on it). The request comes as
// late as the engine sees the records (up to a tick of the queue, 0.5 ms,
// or a wake-up batch of 512 records), so the kernel's launches in between
// go unmeasured: confirmation is for a race that repeats, which it still
// does after them.
bool engine_on_own_thread(const session_config& config, bool tsan_bridge_active);

// Note [The ThreadSanitizer bridge needs records at the call]
// The bridge mirrors each record on the thread that made the call, while
// the call is made (Note [Streams are fibers] in sanitizer/tsan/
// tsan_bridge.h): TSan checks the program's own host accesses in the order
// they happen. A launch held back for its measured footprint (Note
// [Measured footprints arrive late]) reaches the engine, and so the bridge,
// later and perhaps on another thread: host reads made meanwhile would look
// ordered before the kernel (missed races), and a synchronization delivered
// on another thread would order the wrong thread (reports the engine
// considers ordered). So with the bridge on, kernels are not measured: the
// default capture takes the calls from CUPTI and footprints stay inferred.
// --precise or capture=sanitizer, asked for explicitly, keep measuring and
// leave the bridge off.
struct capture_plan {
  capture_source capture = capture_source::automatic;
  bool tsan_bridge = false;
  std::string note;  // one line for stderr, or empty
};
capture_plan plan_capture(const sanitizer_options& options, bool tsan_bridge_usable);

// A file the options name (suppressions, record) cannot be used; what()
// names it and says why.
class session_input_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class session {
 public:
  // Throws session_input_error for unusable files the options name.
  session(session_config config, driver_queries& driver);
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  // Subscribes the capture source the options and the machine allow (Note
  // [Two capture sources] in docs/injection.md): the Compute Sanitizer API,
  // else CUPTI (Note [Enabling once]). Throws std::runtime_error with the
  // reason.
  void start_capture();
  // Enables the subscribed source unless another thread is enabling it;
  // false when not done.
  bool try_subscribe() noexcept;

  cuda_model& model() noexcept { return model_; }
  // The Sanitizer API source, once it runs (null otherwise): for the
  // benchmarks' controls (Note [Launches paused for a benchmark] in
  // sanitizer_source.cpp).
  sanitizer_source* measuring_source() const noexcept {
    return measuring_.load(std::memory_order_acquire);
  }
  // The recorder every record goes through (tests add sinks to it).
  recorder& log() noexcept { return recorder_; }
  // The calling thread's stack (outside callbacks: annotations).
  call_site capture_call_site() noexcept { return call_sites_.capture(0); }
  // The PyTorch support asked whether this session runs: it tells the
  // tensors' host accesses from now on (the result file says "torch").
  void python_support_attached() noexcept {
    python_support_.store(true, std::memory_order_relaxed);
  }
  // The interpreter is finalizing: its frames are no longer read (Note [No
  // walk once the interpreter finalizes] in inject/stack/python_frames.cpp).
  void python_exiting() noexcept;
  // The stack of a caching allocator block handed out on the calling thread;
  // counts those that took an unwind (Note [A block's stack is its
  // operator's] in torch_entry.cpp).
  call_site capture_block_call_site() noexcept;
  const sanitizer_options& options() const noexcept { return config_.options; }

  // NVTX initialized (InitializeInjectionNvtx2, at the program's first NVTX
  // call, maybe before cuInit): our own NVTX handlers take the ranges (Note
  // [NVTX without CUPTI]). Returns NVTX's success value.
  int nvtx_initialized(const void* get_export_table) noexcept;

  // Prints the report and records the result, once (Note [Reports at exit]).
  void finish() noexcept;
  // The same at a signal, with the checking cut short to end within a few
  // seconds (Note [A report within the time a signal leaves] in
  // queued_sink.h). When a report is being made already (Note [A signal
  // while the report is made]) it is hurried, and this waits for it; false
  // when it is being made on this thread, which the signal interrupted.
  bool finish_at_signal() noexcept;

  // Note [Where the engine runs]
  bool engine_on_own_thread() const noexcept { return engine_queue_ != nullptr; }

 private:
  void on_diagnostic(const diagnostic& d);
  // At a signal: what settle_footprints and the engine's queue left
  // unchecked, said in one line before the report.
  void cut_short() noexcept;
  void say_cut_short(std::uint64_t abandoned, std::uint64_t unchecked,
                     bool held_counted) const noexcept;
  enum class finishing : std::uint8_t { at_exit, at_signal };
  void make_report(finishing when) noexcept;
  void measure_candidate(const diagnostic& d);
  // Launches of a candidate's kernel measured to confirm or refute it.
  static constexpr unsigned candidate_measurements = 4;
  // Reads back every measured launch and releases the log (at exit).
  void settle_footprints() noexcept;
  class nvtx_to_model;
  bool suppressed(const diagnostic& d) const;
  // Returns the number of diagnostics left after suppressions.
  std::uint64_t print_report() noexcept;
  void print_debug_counters() const;
  // Reads this process's Python frames at its CUDA calls, if it runs CPython.
  void attach_python_frames() noexcept;
  // One line after a text report whose Python stacks are native frames.
  void say_python_frames_unread(std::ostream& out) const;
  void close_trace() noexcept;
  void write_result(std::uint64_t diagnostics) const noexcept;
  // For the result file: "tsan", "torch" (the PyTorch support tells the
  // tensors' host accesses), "annotations" or "annotations-tsan-off".
  std::string_view host_accesses() const noexcept;

  session_config config_;
  suppressions suppressions_;
  recorder recorder_;
  engine engine_;
  // Between the recorder and every consumer: holds the log behind a launch
  // whose measured footprint is not back (Note [Measured footprints arrive
  // late]).
  precise::footprint_resolver resolver_;
  std::unique_ptr<trace_writer> trace_;
  std::unique_ptr<record_sink> debug_dump_;  // STREAMSAN_DEBUG=2
  cuda_model model_;
  // Note [Python frames read in place]; null outside CPython. Before
  // call_sites_, which points to it.
  std::unique_ptr<python_frames> python_frames_;
  std::string python_frames_not_read_;  // why not, for a report
  unwinder_call_sites call_sites_;
  api_dispatcher dispatcher_;
  cupti_subscriber callbacks_;
  std::unique_ptr<sanitizer_source> sanitizer_;  // when the Sanitizer API is the source
  std::unique_ptr<nvtx::listener> nvtx_;
  std::unique_ptr<tsan_attachment> tsan_;  // docs/tsan-bridge.md
  bool tsan_off_ = false;  // a usable bridge the capture plan turned off
  std::atomic<bool> python_support_{false};
  std::atomic<bool> finished_{false};
  std::atomic<pid_t> finishing_thread_{0};  // the thread making the report
  std::atomic<bool> hurried_{false};        // a signal came meanwhile
  std::atomic<bool> reported_{false};       // the report is made
  // For STREAMSAN_DEBUG: how long the exit waited for the measured
  // footprints, then for the engine's queue (written by the finishing
  // thread before it prints).
  std::uint64_t exit_settle_ns_ = 0;
  std::uint64_t exit_drain_ns_ = 0;
  // Note [A block's stack is its operator's]: for STREAMSAN_DEBUG.
  std::atomic<std::uint64_t> blocks_unwound_{0};
  // sanitizer_, for the engine's thread (measure_candidate): set once it is
  // enabled, never cleared while records flow.
  std::atomic<sanitizer_source*> measuring_{nullptr};
  // The engine's own thread (Note [Where the engine runs]); null when the
  // engine runs on the program's threads. Last: closed (drained) first.
  std::unique_ptr<queued_sink> engine_queue_;
};

}  // namespace streamsan::injection
