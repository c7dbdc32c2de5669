#include "inject/session/session.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include "inject/session/process_name.h"
#include "inject/session/run_result.h"
#include "inject/stack/fast_unwinder.h"
#include "sanitizer/log/elapsed.h"
#include "sanitizer/log/jsonl_dump.h"
#include "sanitizer/report/fix_hint.h"
#include "sanitizer/report/report_format.h"
#include "sanitizer/report/symbolizer.h"

namespace streamsan::injection {
namespace {

// Note [Reports of several processes]
std::string expand_pid(std::string path) {
  return own_path(std::move(path), ::getpid(), name_this_process().has_value());
}

// How long the engine may go on checking at a signal (Note [A report within
// the time a signal leaves] in queued_sink.h): well inside the alarm of
// last_words_seconds, and the report still written within the 5 s that a
// `timeout -k 5` leaves.
constexpr std::chrono::seconds signal_checking_budget{3};

// Call-stack keys of the NVTX handlers (Note [Path cache]).
enum nvtx_call : std::uint32_t { nvtx_push = 1, nvtx_pop = 2, nvtx_mark = 3, nvtx_other = 4 };

}  // namespace

// NVTX ranges and marks into the model, with the caller's stack.
class session::nvtx_to_model final : public nvtx::listener {
 public:
  nvtx_to_model(cuda_model& model, call_site_source& sites) : model_(model), sites_(sites) {}
  void range_pushed(std::string_view message) override {
    model_.range_pushed(here(nvtx_push), message);
  }
  void range_popped() override { model_.range_popped(here(nvtx_pop)); }
  void marked(std::string_view message) override { model_.marked(here(nvtx_mark), message); }
  void unmodelled(std::string_view api) override { model_.unmodelled(here(nvtx_other), api); }

 private:
  call_site here(nvtx_call c) { return sites_.capture(path_key(path_domain::nvtx, c, 0, 0)); }
  cuda_model& model_;
  call_site_source& sites_;
};

session::session(session_config config, driver_queries& driver)
    : config_(std::move(config)),
      // A few frames more than shown: the report folds the CUDA runtime's
      // and nvcc's stub frames into one line (Note [Stacks start at the user]).
      recorder_(recorder_options{config_.options.stack_depth > 0,
                                 std::min(config_.options.stack_depth + 8, 64u)}),
      engine_(engine_options{.timeline_window = draws_timelines(config_.options.format)
                                                    ? default_timeline_window
                                                    : 0}),
      model_(recorder_, driver),
      call_sites_(config_.options.stack_depth == 0 ? 0 : std::min(config_.options.stack_depth + 8, 64u),
                  config_.options.cpp_stacks),
      dispatcher_(model_, call_sites_),
      callbacks_(dispatcher_, model_, call_sites_) {
  const auto& options = config_.options;
  if (!options.suppressions.empty()) {
    try {
      suppressions_ = suppressions::load(options.suppressions);
    } catch (const std::exception& e) {
      throw session_input_error(e.what());
    }
  }
  if (config_.debug > 0) dispatcher_.count_callbacks_per_call();
  dispatcher_.set_runtime_launch_callbacks(config_.library.runtime_launch_callbacks);
  // The user's rules first, then the built-in ones (as `streamsan analyze`).
  if (options.builtin_suppressions) suppressions_.append(suppressions::builtin());
  engine_.set_diagnostic_callback([this](const diagnostic& d) { on_diagnostic(d); });
  // The ThreadSanitizer bridge, when the program was built with
  // -fsanitize=thread (docs/tsan-bridge.md).
  tsan_ = std::make_unique<tsan_attachment>(engine_, model_, config_.tsan_bridge);
  // Note [Where the engine runs]
  if (injection::engine_on_own_thread(config_, tsan_->active())) {
    engine_queue_ = std::make_unique<queued_sink>();
  }
  recorder_.add_sink(resolver_);
  model_.set_footprint_resolver(&resolver_);
  nvtx_ = std::make_unique<nvtx_to_model>(model_, call_sites_);
  if (wants_python_frames(options)) attach_python_frames();
  const auto consumer = [this](record_sink& sink) {
    if (engine_queue_) {
      engine_queue_->add_downstream(sink);
    } else {
      resolver_.add_downstream(sink);
    }
  };
  consumer(engine_);
  if (config_.debug >= 2) {
    // Every record as a JSON line on stderr, for whoever works on streamsan.
    debug_dump_ = std::make_unique<jsonl_dumper>(std::cerr);
    consumer(*debug_dump_);
  }
  if (!options.record.empty()) {
    try {
      trace_ = std::make_unique<trace_writer>(expand_pid(options.record));
    } catch (const std::exception& e) {
      throw session_input_error("record=" + options.record + ": " + e.what());
    }
    consumer(*trace_);
  }
  if (engine_queue_) {
    resolver_.add_downstream(*engine_queue_);
    engine_queue_->start();
  }
}

bool engine_on_own_thread(const session_config& config, bool tsan_bridge_active) {
  return config.engine_thread && !config.options.halt_on_error && !tsan_bridge_active;
}

capture_plan plan_capture(const sanitizer_options& options, bool tsan_bridge_usable) {
  capture_plan plan{options.capture, tsan_bridge_usable, {}};
  if (!tsan_bridge_usable || options.capture == capture_source::cupti) return plan;
  if (options.precise || options.capture == capture_source::sanitizer_api) {
    plan.tsan_bridge = false;
    plan.note = std::string("streamsan: ") +
                (options.precise ? "--precise" : "capture=sanitizer") +
                " delivers kernel launches late, with their measured footprints; the "
                "ThreadSanitizer bridge needs them at the call and stays off (host accesses "
                "are seen only through annotations)";
    return plan;
  }
  plan.capture = capture_source::cupti;
  plan.note =
      "streamsan: with the ThreadSanitizer bridge, kernels are not measured (the bridge needs "
      "each launch at the call): footprints stay inferred (guessed from their arguments); "
      "possible races are listed but not confirmed";
  return plan;
}

void session::start_capture() {
  const auto& options = config_.options;
  // Note [The ThreadSanitizer bridge needs records at the call]
  const auto plan = plan_capture(options, tsan_ && tsan_->active());
  if (!plan.note.empty()) std::fprintf(stderr, "%s\n", plan.note.c_str());
  if (!plan.tsan_bridge && tsan_ && tsan_->active()) tsan_off_ = true;
  if (!plan.tsan_bridge) tsan_.reset();
  std::string why;
  if (plan.capture != capture_source::cupti) {
    sanitizer_ = sanitizer_source::create(
        dispatcher_, model_,
        options.precise ? measurement_policy::every_launch : measurement_policy::on_demand, why,
        config_.library.measure_graph_nodes ? graph_node_measurement::on : graph_node_measurement::off);
    if (sanitizer_) {
      sanitizer_->set_unpatch_wait(std::chrono::milliseconds(config_.library.unpatch_wait_ms));
      sanitizer_->set_table_headroom(config_.library.table_headroom);
      if (config_.debug > 0) sanitizer_->count_api_callbacks();
      // Note [Decoded on a thread of its own]: only beside the engine's
      // thread (Note [Where the engine runs]): with halt_on_error, the
      // report a footprint confirms must come before the program goes on.
      sanitizer_->set_decode_thread(config_.library.decode_thread && engine_on_own_thread());
      try {
        sanitizer_->enable();
        measuring_.store(sanitizer_.get(), std::memory_order_release);
        return;
      } catch (const std::exception& e) {
        why = e.what();
        sanitizer_.reset();
      }
    }
    if (options.capture == capture_source::sanitizer_api) {
      throw std::runtime_error("capture=sanitizer: " + why);
    }
    // Note [Two capture sources]: CUPTI sees the same calls but cannot
    // measure, so footprints stay inferred and candidates unconfirmed.
    if (!options.precise) why = why.substr(0, why.find('\n'));
    std::fprintf(stderr,
                 "streamsan: %s%s\nstreamsan: kernel footprints stay inferred (guessed from "
                 "their arguments); possible races are listed but not confirmed\n",
                 options.precise ? "--precise needs the Compute Sanitizer API: " : "",
                 why.c_str());
  }
  callbacks_.enable();
}

int session::nvtx_initialized(const void* get_export_table) noexcept {
  return nvtx::install_nvtx_injection(get_export_table, *nvtx_);
}

void session::settle_footprints() noexcept {
  if (sanitizer_) sanitizer_->drain();
  resolver_.release_all();
}

// Note [A report within the time a signal leaves] (queued_sink.h), Note
// [Launches in flight when the program is stopped] (launch_tracker.cpp):
// the measured launches in flight keep their inferred footprints, and the
// engine checks what it can until signal_checking_budget is spent. The
// signal may have come while its thread held the recorder's or the
// resolver's lock (a producer waiting for room behind a slow engine), so
// neither is taken here: the records the resolver still holds are counted
// if its lock is free, and never delivered (the queue is closed by then).
void session::cut_short() noexcept {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + signal_checking_budget;
  const auto debug_step = [&](const char* step) {
    if (config_.debug < 1) return;
    std::fprintf(stderr, "streamsan: debug: at the signal, %s after %.1f ms\n", step,
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                           start).count());
  };
  const std::size_t abandoned = sanitizer_ ? sanitizer_->abandon(deadline) : 0;
  debug_step("launches in flight abandoned");
  std::uint64_t unchecked = 0;
  if (engine_queue_) {
    unchecked = engine_queue_->close_by(deadline);
    debug_step("the engine stopped");
  } else {
    // The engine runs on the program's threads (halt_on_error): it has
    // checked every record delivered, and gets the held ones now.
    recorder_.remove_sink(resolver_);
    resolver_.release_all();
  }
  const std::optional<std::size_t> held = resolver_.held_if_free();
  say_cut_short(abandoned, unchecked + held.value_or(0), held.has_value());
}

// The one line before a report whose checking a signal cut short; nothing
// when nothing was left. `held_counted`: the records held behind measured
// launches are among `unchecked` (their lock was free to count them).
void session::say_cut_short(std::uint64_t abandoned, std::uint64_t unchecked,
                            bool held_counted) const noexcept {
  if (abandoned == 0 && unchecked == 0 && held_counted) return;
  std::fprintf(stderr,
               "streamsan: checking was cut short: %llu measured launch(es) in flight keep "
               "their inferred footprints, %llu record(s) of the log were not checked%s\n",
               static_cast<unsigned long long>(abandoned),
               static_cast<unsigned long long>(unchecked),
               held_counted ? "" : ", nor those held behind measured launches");
}

bool session::try_subscribe() noexcept { return callbacks_.try_enable(); }

call_site session::capture_block_call_site() noexcept {
  const call_site at = call_sites_.capture(0);
  // Native frames come first when there are any: this capture unwound.
  if (!at.frames.empty() && at.frames.front() < interpreter_frame_base) {
    blocks_unwound_.fetch_add(1, std::memory_order_relaxed);
  }
  return at;
}

bool session::suppressed(const diagnostic& d) const {
  if (suppressions_.empty()) return false;
  symbolizer symbols(engine_.tables(), symbol_source::log_then_this_process);
  return suppressions_.match(d, symbols).has_value();
}

// A candidate (Note [Candidates and confirmed diagnostics]) is no report:
// the kernels whose footprints were guessed are measured on their next
// launches (a graph kernel node's on its exec's next launch, Note [Which
// graph nodes are measured]), and a measured conflict at the same call
// sites confirms it.
// On the engine's thread, or the program's (Note [Where the engine runs]).
void session::measure_candidate(const diagnostic& d) {
  auto* const measuring = measuring_.load(std::memory_order_acquire);
  if (measuring == nullptr) return;
  for (const operation_ref* side : inferred_sides(d)) {
    if (side->op != operation_kind::kernel && side->op != operation_kind::graph_node) continue;
    const std::string_view name = engine_.tables().string(side->name);
    if (!name.empty()) measuring->measure_kernel(name, candidate_measurements);
  }
}

// Note [Reports at exit]: under the recorder's lock.
void session::on_diagnostic(const diagnostic& d) {
  if (is_candidate(d)) {
    measure_candidate(d);
    return;
  }
  if (!config_.options.halt_on_error || suppressed(d)) return;
  dispatcher_.stop();
  const auto kept = print_report();
  close_trace();
  write_result(kept);
  const int status = config_.options.error_exitcode;
  std::_Exit(status != 0 ? status : 1);
}

std::uint64_t session::print_report() noexcept {
  const auto& options = config_.options;
  try {
    symbolizer symbols(engine_.tables(), symbol_source::log_then_this_process);
    const auto filtered = apply_suppressions(engine_.diagnostics(), suppressions_, symbols);
    report_input input{filtered.kept, engine_.tables(), &engine_.unmodelled_calls(),
                       engine_.records_processed(), filtered.suppressed,
                       filtered.suppressed_builtin,
                       engine_.statistics().device_synchronized_conflicts,
                       engine_.statistics().host_ordered_conflicts};
    report_options ro;
    if (options.print_limit != 0) ro.print_limit = options.print_limit;
    ro.stacks.raw = options.raw_stacks;
    ro.stacks.depth = options.stack_depth;
    ro.stacks.native_with_python = options.cpp_stacks;
    // Python programs (their frames) get torch's words in fix hints.
    ro.vocabulary = detect_vocabulary(filtered.kept, symbols);
    ro.process = name_this_process();
    std::ofstream file;
    std::ostream* out = &std::cerr;
    if (!options.log_path.empty()) {
      // The name found above, not a second read of /proc/self/cmdline.
      const std::string path = own_path(options.log_path, ::getpid(), ro.process.has_value());
      file.open(path);
      if (!file) {
        std::cerr << "streamsan: cannot write the report to " << path
                  << "; printing it here instead\n";
      } else {
        out = &file;
      }
    }
    ro.color = out == &std::cerr && use_color(options.color, STDERR_FILENO);
    streamsan::print_report(*out, options.format, input, symbols, ro);
    if (options.format == report_format::text && !filtered.kept.empty()) {
      say_python_frames_unread(*out);
    }
    out->flush();
    // Possible races (candidates) are listed, not counted.
    return confirmed_count(filtered.kept);
  } catch (const std::exception& e) {
    std::cerr << "streamsan: printing the report failed: " << e.what() << '\n';
    return confirmed_count(engine_.diagnostics());
  }
}

void session::close_trace() noexcept {
  if (!trace_) return;
  try {
    trace_->close();
  } catch (const std::exception& e) {
    std::cerr << "streamsan: " << e.what() << '\n';
  }
}

void session::attach_python_frames() noexcept {
  try {
    auto attached = injection::attach_python_frames(
        [this](std::uint64_t address, std::string_view function, std::string_view file,
               std::uint32_t line) { model_.symbol_defined(address, function, file, line, ""); });
    python_frames_ = std::move(attached.frames);
    python_frames_not_read_ = std::move(attached.not_read);
    if (python_frames_ && config_.debug > 0) python_frames_->time_walks(true);
    call_sites_.read_python_frames(python_frames_.get());
  } catch (const std::exception& e) {
    python_frames_not_read_ = std::string("Python frames are not read: ") + e.what();
  }
}

void session::python_exiting() noexcept {
  if (python_frames_) python_frames_->close();
}

void session::say_python_frames_unread(std::ostream& out) const {
  // The PyTorch support's operators carry their own frames; what is said
  // here is about every other call.
  out << python_frames_unread_line(python_frames_not_read_,
                                   python_frames_ ? python_frames_->stopped() : "");
}

std::string_view session::host_accesses() const noexcept {
  if (tsan_ && tsan_->active()) return "tsan";
  if (python_support_.load(std::memory_order_relaxed)) return "torch";
  if (runs_python_interpreter()) return "interpreter";
  if (tsan_off_ || (tsan_ && tsan_->runtime_found())) return "annotations-tsan-off";
  return "annotations";
}

void session::write_result(std::uint64_t diagnostics) const noexcept {
  if (config_.result_file.empty()) return;
  std::uint64_t unmodelled = 0;
  for (const auto& [name, count] : engine_.unmodelled_calls()) unmodelled += count;
  append_result_line(config_.result_file,
                     finished_line(process_result{::getpid(), dispatcher_.api_calls(),
                                                  diagnostics, unmodelled,
                                                  host_accesses()}));
}

namespace {

// One STREAMSAN_DEBUG line of unwinder counters.
void print_unwinder_stats(const char* whose, const unwinder_stats& u) {
  std::fprintf(stderr,
               "streamsan: debug: unwinder (%s): captures=%llu slow=%llu rules=%llu scans=%llu "
               "path_hits=%llu path_misses=%llu walks_read_back=%llu\n",
               whose, static_cast<unsigned long long>(u.captures),
               static_cast<unsigned long long>(u.slow_captures),
               static_cast<unsigned long long>(u.rules_computed),
               static_cast<unsigned long long>(u.scans),
               static_cast<unsigned long long>(u.path_hits),
               static_cast<unsigned long long>(u.path_misses),
               static_cast<unsigned long long>(u.walks_read_back));
}

}  // namespace

// STREAMSAN_DEBUG=1: counters for whoever works on streamsan itself.
void session::print_debug_counters() const {
  const auto c = callbacks_.callbacks_received();
  const auto e = engine_.statistics();
  std::fprintf(stderr,
               "streamsan: debug: callbacks runtime=%llu driver=%llu resource=%llu nvtx=%llu "
               "api_calls=%llu records=%llu accesses_checked=%llu "
               "untracked=%llu unknown_alloc=%llu implicit_streams=%llu ignored=%llu; "
               "threads with unwinder state: %zu\n",
               static_cast<unsigned long long>(c.runtime),
               static_cast<unsigned long long>(c.driver),
               static_cast<unsigned long long>(c.resource),
               static_cast<unsigned long long>(c.nvtx),
               static_cast<unsigned long long>(dispatcher_.api_calls()),
               static_cast<unsigned long long>(e.records),
               static_cast<unsigned long long>(e.accesses_checked),
               static_cast<unsigned long long>(e.accesses_untracked),
               static_cast<unsigned long long>(e.accesses_unknown_alloc),
               static_cast<unsigned long long>(e.implicit_streams),
               static_cast<unsigned long long>(e.ignored_records), live_unwinder_states());
  print_unwinder_stats("this thread", current_thread_unwinder_stats());
  // Every thread that captured (autograd's, a program's workers), ended or not.
  print_unwinder_stats("all threads", all_threads_unwinder_stats());
  if (python_frames_) {
    const auto p = python_frames_->stats();
    const auto stopped = python_frames_->stopped();
    std::fprintf(stderr,
                 "streamsan: debug: python frames (3.%u): walks=%llu looked_up=%llu walk_ms=%.1f%s%s\n",
                 python_frames_->layout().minor, static_cast<unsigned long long>(p.walks),
                 static_cast<unsigned long long>(p.frames_looked_up),
                 static_cast<double>(p.walk_ns) / 1e6,
                 stopped.empty() ? "" : " stopped: ", stopped.c_str());
  } else if (!python_frames_not_read_.empty()) {
    std::fprintf(stderr, "streamsan: debug: %s\n", python_frames_not_read_.c_str());
  }
  if (engine_queue_) {
    const auto q = engine_queue_->statistics();
    std::fprintf(stderr,
                 "streamsan: debug: engine thread delivered=%llu producer_waits=%llu "
                 "sleeps=%llu wakeups=%llu arena_growths=%llu dropped=%llu busy_ms=%.1f\n",
                 static_cast<unsigned long long>(q.delivered),
                 static_cast<unsigned long long>(q.producer_waits),
                 static_cast<unsigned long long>(q.consumer_sleeps),
                 static_cast<unsigned long long>(q.wakeups),
                 static_cast<unsigned long long>(q.arena_growths),
                 static_cast<unsigned long long>(q.dropped), static_cast<double>(q.busy_ns) / 1e6);
  }
  if (exit_settle_ns_ + exit_drain_ns_ > 0) {
    std::fprintf(stderr,
                 "streamsan: debug: at exit, measured footprints settled in %.1f ms, "
                 "the engine's queue drained in %.1f ms\n",
                 static_cast<double>(exit_settle_ns_) / 1e6,
                 static_cast<double>(exit_drain_ns_) / 1e6);
  }
  // Note [Caching allocator blocks]
  if (const auto b = model_.block_statistics(); b.allocated + b.unknown_frees + b.outside_segments) {
    std::fprintf(stderr,
                 "streamsan: debug: caching allocator blocks allocated=%llu freed=%llu "
                 "outside_segments=%llu unknown_frees=%llu unwound=%llu\n",
                 static_cast<unsigned long long>(b.allocated),
                 static_cast<unsigned long long>(b.freed),
                 static_cast<unsigned long long>(b.outside_segments),
                 static_cast<unsigned long long>(b.unknown_frees),
                 static_cast<unsigned long long>(blocks_unwound_.load()));
  }
  std::string frequent;
  for (const auto& [name, count] : dispatcher_.most_frequent_calls(16)) {
    frequent += " " + name + "=" + std::to_string(count);
  }
  std::fprintf(stderr, "streamsan: debug: most frequent calls (entry callbacks):%s\n",
               frequent.c_str());
  if (!sanitizer_) return;
  const auto m = sanitizer_->stats();
  std::fprintf(stderr,
               "streamsan: debug: sanitizer api_callbacks=%llu (nested in ours %llu) launches=%llu "
               "(launch calls before work could overlap %llu) measured=%llu "
               "incomplete=%llu (too fragmented %llu) failed=%llu (decodes %llu, jobs_thrown %llu) "
               "waits=%llu slots=%llu read_back=%llu spilled=%llu "
               "setup_ms=%.1f read_back_ms=%.1f (copies %.1f) decode_ms=%.1f "
               "modules_patched=%llu unpatched=%llu (at a synchronize %llu) change_ms=%.1f "
               "patched_at_exit=%llu "
               "changes_deferred=%llu (locked out %llu) drain_waits=%llu (drained %llu, %.1f ms) "
               "put_off_at_load=%llu\n",
               static_cast<unsigned long long>(m.api_callbacks),
               static_cast<unsigned long long>(m.nested_api_callbacks),
               static_cast<unsigned long long>(m.launches),
               static_cast<unsigned long long>(m.launches_before_overlap),
               static_cast<unsigned long long>(m.measured),
               static_cast<unsigned long long>(m.incomplete),
               static_cast<unsigned long long>(m.too_fragmented),
               static_cast<unsigned long long>(m.failed),
               static_cast<unsigned long long>(m.decode_failed),
               static_cast<unsigned long long>(m.jobs_thrown),
               static_cast<unsigned long long>(m.waits),
               static_cast<unsigned long long>(m.pages),
               static_cast<unsigned long long>(m.bytes_read_back),
               static_cast<unsigned long long>(m.spilled),
               static_cast<double>(m.setup_ns) / 1e6, static_cast<double>(m.read_back_ns) / 1e6,
               static_cast<double>(m.copy_ns) / 1e6, static_cast<double>(m.decode_ns) / 1e6,
               static_cast<unsigned long long>(m.modules_patched),
               static_cast<unsigned long long>(m.modules_unpatched),
               static_cast<unsigned long long>(m.unpatched_at_synchronize),
               static_cast<double>(m.change_ns) / 1e6,
               static_cast<unsigned long long>(m.modules_patched_now),
               static_cast<unsigned long long>(m.changes_deferred),
               static_cast<unsigned long long>(m.changes_locked_out),
               static_cast<unsigned long long>(m.drain_waits),
               static_cast<unsigned long long>(m.drained),
               static_cast<double>(m.drain_wait_ns) / 1e6,
               static_cast<unsigned long long>(m.patches_put_off_at_load));
  for (const auto& p : m.patched_now) {
    std::fprintf(stderr,
                 "streamsan: debug: still patched: a module of kernel %.120s (last launch "
                 "wanted a measurement: %s; streams not seen idle: %zu)\n",
                 p.kernel.c_str(), p.wanted_at_last_launch ? "yes" : "no", p.busy_streams);
  }
}

// Note [Reports at exit]
void session::finish() noexcept {
  if (finished_.exchange(true)) return;
  make_report(finishing::at_exit);
}

// Note [A signal while the report is made]
// A program whose exit is under way is making its report (Note [Reports at
// exit]), and that can take a while: the engine may have a long queue
// before it (Note [A report within the time a signal leaves]). A signal
// then (`timeout` running out during it) found finish() done already and
// went on to end the program: on an H200 a --precise run stopped that way
// lost its whole report. So the signal hurries the report being made: the
// drain stops waiting for kernels still running and abandons their
// measurements (launch_tracker::hurry), the engine stops at its next
// record, records given to the queue after that are dropped, and what is
// left unchecked is said as at a signal. A signal on another thread waits
// for the report (the alarm of Note [Reports when the program dies]
// bounds the wait); one that interrupted the report's own thread returns
// to it, and the signal is raised again once the report is made
// (raise_deferred_signal).
bool session::finish_at_signal() noexcept {
  if (!finished_.exchange(true)) {
    make_report(finishing::at_signal);
    return true;
  }
  // Made already (the signal came later in the exit): it goes on at once.
  if (reported_.load(std::memory_order_acquire)) return true;
  hurried_.store(true, std::memory_order_release);
  if (sanitizer_) sanitizer_->hurry();
  if (engine_queue_) engine_queue_->give_up();
  if (finishing_thread_.load(std::memory_order_acquire) == ::gettid()) return false;
  const struct timespec pause {0, 1'000'000};
  while (!reported_.load(std::memory_order_acquire)) ::nanosleep(&pause, nullptr);
  return true;
}

void session::make_report(finishing when) noexcept {
  finishing_thread_.store(::gettid(), std::memory_order_release);
  // A fatal signal on the engine's thread (Note [Reports when the program
  // dies]): the queue stops first, so that a producer waiting for room lets
  // go of the recorder's lock; what it still held is not delivered.
  if (engine_queue_ && engine_queue_->on_consumer_thread()) engine_queue_->close();
  dispatcher_.stop();
  if (when == finishing::at_signal) {
    cut_short();
  } else {
    const auto settling = std::chrono::steady_clock::now();
    settle_footprints();
    exit_settle_ns_ = nanoseconds_since(settling);
    const auto draining = std::chrono::steady_clock::now();
    // Waits for a delivery in progress; none reaches the resolver afterwards,
    // and what it still holds goes on to the engine, the trace and the dump.
    recorder_.remove_sink(resolver_);
    resolver_.release_all();
    // The engine's thread delivers everything queued, then ends.
    if (engine_queue_) engine_queue_->close();
    exit_drain_ns_ = nanoseconds_since(draining);
    // Note [A signal while the report is made]: the drain's abandoned
    // launches, and what the queue left or dropped.
    if (hurried_.load(std::memory_order_acquire)) {
      const auto q = engine_queue_ ? engine_queue_->statistics() : queued_sink_statistics{};
      say_cut_short(sanitizer_ ? sanitizer_->stats().abandoned : 0, q.undelivered + q.dropped,
                    true);
    }
  }
  // Work deferred behind host functions that never ran is checked now.
  if (tsan_) tsan_->finish();
  if (config_.debug >= 1) {
    print_debug_counters();
    if (tsan_ && tsan_->active()) {
      std::fprintf(stderr, "streamsan: debug: %s\n", tsan_->debug_counters().c_str());
    }
  }
  // Said once: kernels of modules that could not be patched, and launches
  // whose footprints could not be decoded, keep guessed footprints (never
  // abort, never change the program).
  if (sanitizer_) {
    for (const auto& why : sanitizer_->patch_failures()) {
      std::fprintf(stderr,
                   "streamsan: a module could not be instrumented (%s): their footprints "
                   "stay inferred\n",
                   why.c_str());
    }
    // Note [A decoding job that throws] (launch_tracker.cpp)
    for (const auto& what : sanitizer_->decode_failures()) {
      std::fprintf(stderr,
                   "streamsan: a measured footprint could not be decoded (%s): those launches "
                   "keep inferred footprints\n",
                   what.c_str());
    }
  }
  const auto kept = print_report();
  close_trace();
  write_result(kept);
  reported_.store(true, std::memory_order_release);
}

}  // namespace streamsan::injection
