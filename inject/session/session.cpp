#include "inject/session/session.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>

#include "cli/exit_codes.h"
#include "inject/stack/fast_unwinder.h"
#include "inject/session/run_result.h"
#include "sanitizer/log/jsonl_dump.h"
#include "sanitizer/report/report_format.h"
#include "sanitizer/report/symbolizer.h"

namespace streamsan::injection {
namespace {

std::atomic<session*> running{nullptr};
std::once_flag start_once;

[[noreturn]] void fail(const std::string& message, int status) {
  std::fprintf(stderr, "streamsan: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(status);
}

sanitizer_options read_options() {
  const char* text = std::getenv(std::string(options_variable).c_str());
  if (text == nullptr) return {};
  try {
    return parse_options(text);
  } catch (const option_error& e) {
    fail(std::string(options_variable) + ": " + e.what(), exit_code::usage);
  }
}

std::string expand_pid(std::string path) {
  const std::string pid = std::to_string(::getpid());
  for (auto at = path.find("%p"); at != std::string::npos; at = path.find("%p", at + pid.size())) {
    path.replace(at, 2, pid);
  }
  return path;
}

// The file this library was loaded from, to hide its frames.
std::string own_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&own_path), &info) != 0 && info.dli_fname) {
    return info.dli_fname;
  }
  return "libstreamsan_inject.so";
}

// The modules whose frames reports do not show (see fast_unwinder.h); again
// once the driver is loaded, if the session started before it.
void hide_internal_modules() {
  const std::string self = own_path();
  const std::string_view internal[] = {"libcuda.so", "libcupti.so", "libcudart.so",
                                       "libnvrtc", self};
  set_internal_modules(internal);
}

void finish_at_exit() {
  if (auto* s = session::current()) s->finish();
}

}  // namespace

session::session(sanitizer_options options)
    : options_(std::move(options)),
      recorder_(recorder_options{options_.stack_depth > 0, options_.stack_depth}),
      model_(recorder_, driver_),
      call_sites_(options_.stack_depth),
      dispatcher_(model_, call_sites_),
      callbacks_(dispatcher_, model_, call_sites_) {
  if (!options_.suppressions.empty()) {
    try {
      suppressions_ = suppressions::load(options_.suppressions);
    } catch (const std::exception& e) {
      fail(e.what(), exit_code::bad_input);
    }
  }
  engine_.set_diagnostic_callback([this](const diagnostic& d) { on_diagnostic(d); });
  recorder_.add_sink(engine_);
  if (const char* debug = std::getenv("STREAMSAN_DEBUG"); debug && std::string_view(debug) == "2") {
    // Every record as a JSON line on stderr, for whoever works on streamsan.
    debug_dump_ = std::make_unique<jsonl_dumper>(std::cerr);
    recorder_.add_sink(*debug_dump_);
  }
  if (!options_.record.empty()) {
    try {
      trace_ = std::make_unique<trace_writer>(expand_pid(options_.record));
    } catch (const std::exception& e) {
      fail(std::string("record=") + options_.record + ": " + e.what(), exit_code::bad_input);
    }
    recorder_.add_sink(*trace_);
  }
  hide_internal_modules();
}

void session::cuda_initialized() {
  static std::once_flag once;
  std::call_once(once, [this] {
    try {
      driver_.resolve();
    } catch (const std::exception& e) {
      fail(std::string("cannot start: ") + e.what(), exit_code::cannot_run);
    }
    hide_internal_modules();
    try {
      callbacks_.enable();
    } catch (const std::exception& e) {
      fail(std::string("cannot subscribe to CUDA callbacks: ") + e.what(), exit_code::cannot_run);
    }
  });
}

void session::try_subscribe() noexcept {
  // cuda_initialized() tries again and reports a failure then.
  callbacks_.try_enable();
}

session& session::start() {
  std::call_once(start_once, [] {
    const auto options = read_options();
    session* s = nullptr;
    try {
      s = new session(options);  // lives until the process ends
    } catch (const std::exception& e) {
      fail(std::string("cannot start: ") + e.what(), exit_code::cannot_run);
    }
    if (const char* result = std::getenv(std::string(result_file_variable).c_str())) {
      append_result_line(result, started_line(::getpid()));
    }
    running.store(s, std::memory_order_release);
    std::atexit(finish_at_exit);
  });
  return *running.load(std::memory_order_acquire);
}

session* session::current() noexcept { return running.load(std::memory_order_acquire); }

void session::on_diagnostic(const diagnostic&) {
  if (!options_.halt_on_error) return;
  // Called by the engine under the recorder's lock: print and leave without
  // going through anything that records.
  if (finished_.exchange(true)) return;
  dispatcher_.stop();
  const auto kept = print_report();
  write_result(kept);
  if (kept > 0) std::_Exit(options_.error_exitcode != 0 ? options_.error_exitcode : 1);
  finished_.store(false);  // suppressed: keep going
  dispatcher_.resume();
}

std::uint64_t session::print_report() noexcept {
  try {
    symbolizer symbols(engine_.tables(), symbol_source::log_then_this_process);
    const auto filtered = apply_suppressions(engine_.diagnostics(), suppressions_, symbols);
    report_input input{filtered.kept, engine_.tables(), &engine_.unmodelled_calls(),
                       engine_.records_processed(), filtered.suppressed};
    report_options ro;
    if (options_.print_limit != 0) ro.print_limit = options_.print_limit;
    std::ofstream file;
    std::ostream* out = &std::cerr;
    if (!options_.log_path.empty()) {
      const std::string path = expand_pid(options_.log_path);
      file.open(path);
      if (!file) {
        std::cerr << "streamsan: cannot write the report to " << path
                  << "; printing it here instead\n";
      } else {
        out = &file;
      }
    }
    streamsan::print_report(*out, options_.format, input, symbols, ro);
    out->flush();
    return filtered.kept.size();
  } catch (const std::exception& e) {
    std::cerr << "streamsan: printing the report failed: " << e.what() << '\n';
    return engine_.diagnostics().size();
  }
}

void session::write_result(std::uint64_t diagnostics) noexcept {
  if (trace_) {
    try {
      trace_->close();
    } catch (const std::exception& e) {
      std::cerr << "streamsan: " << e.what() << '\n';
    }
  }
  const char* result = std::getenv(std::string(result_file_variable).c_str());
  if (result == nullptr) return;
  std::uint64_t unmodelled = 0;
  for (const auto& [name, count] : engine_.unmodelled_calls()) unmodelled += count;
  append_result_line(result, finished_line(process_result{::getpid(), dispatcher_.api_calls(),
                                                          diagnostics, unmodelled}));
}

// STREAMSAN_DEBUG=1: counters for whoever works on streamsan itself.
static void print_debug_counters(const engine& eng, const api_dispatcher& dispatcher,
                                 const cupti_subscriber& callbacks) {
  const auto c = callbacks.callbacks_received();
  const auto u = current_thread_unwinder_stats();
  const auto e = eng.statistics();
  std::fprintf(stderr,
               "streamsan: debug: callbacks runtime=%llu driver=%llu resource=%llu nvtx=%llu "
               "api_calls=%llu records=%llu accesses_checked=%llu "
               "untracked=%llu unknown_alloc=%llu implicit_streams=%llu ignored=%llu | "
               "unwinder (this thread): captures=%llu slow=%llu rules=%llu scans=%llu "
               "path_hits=%llu path_misses=%llu\n",
               static_cast<unsigned long long>(c.runtime),
               static_cast<unsigned long long>(c.driver),
               static_cast<unsigned long long>(c.resource),
               static_cast<unsigned long long>(c.nvtx),
               static_cast<unsigned long long>(dispatcher.api_calls()),
               static_cast<unsigned long long>(e.records),
               static_cast<unsigned long long>(e.accesses_checked),
               static_cast<unsigned long long>(e.accesses_untracked),
               static_cast<unsigned long long>(e.accesses_unknown_alloc),
               static_cast<unsigned long long>(e.implicit_streams),
               static_cast<unsigned long long>(e.ignored_records),
               static_cast<unsigned long long>(u.captures),
               static_cast<unsigned long long>(u.slow_captures),
               static_cast<unsigned long long>(u.rules_computed),
               static_cast<unsigned long long>(u.scans),
               static_cast<unsigned long long>(u.path_hits),
               static_cast<unsigned long long>(u.path_misses));
}

void session::finish() noexcept {
  if (finished_.exchange(true)) return;
  dispatcher_.stop();
  if (const char* debug = std::getenv("STREAMSAN_DEBUG"); debug && *debug && *debug != '0') {
    print_debug_counters(engine_, dispatcher_, callbacks_);
  }
  write_result(print_report());
}

}  // namespace streamsan::injection
