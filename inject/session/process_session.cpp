#include "inject/session/process_session.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>

#include "inject/driver/cuda_driver_queries.h"
#include "inject/session/fatal_signals.h"
#include "inject/session/run_result.h"
#include "inject/stack/fast_unwinder.h"
#include "sanitizer/report/exit_codes.h"

namespace streamsan::injection::process_session {
namespace {

std::atomic<session*> running{nullptr};
cuda_driver_queries* the_driver = nullptr;  // set with running
std::once_flag start_once;

[[noreturn]] void fail(const std::string& message, int status) {
  std::fprintf(stderr, "streamsan: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(status);
}

session_config read_config() {
  session_config config;
  if (const char* text = std::getenv(std::string(options_variable).c_str())) {
    try {
      config.options = parse_options(text);
    } catch (const option_error& e) {
      fail(std::string(options_variable) + ": " + e.what(), exit_code::usage);
    }
  }
  if (const char* result = std::getenv(std::string(result_file_variable).c_str())) {
    config.result_file = result;
  }
  if (const char* tsan = std::getenv("STREAMSAN_TSAN")) {
    config.tsan_bridge = std::string_view(tsan) != "0";
  }
  // Note [Where the engine runs]
  if (const char* engine_thread = std::getenv("STREAMSAN_ENGINE_THREAD")) {
    config.engine_thread = std::string_view(engine_thread) != "0";
  }
  try {
    config.library = read_library_settings(
        [](std::string_view name) { return std::getenv(std::string(name).c_str()); });
  } catch (const option_error& e) {
    fail(e.what(), exit_code::usage);  // it names the variable
  }
  if (const char* debug = std::getenv("STREAMSAN_DEBUG"); debug && *debug && *debug != '0') {
    config.debug = std::string_view(debug) == "2" ? 2 : 1;
  }
  return config;
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
  const std::string_view internal[] = {"libcuda.so", "libcupti.so", "libsanitizer-public.so",
                                       "libcudart.so", "libnvrtc", self};
  set_internal_modules(internal);
}

void finish_at_exit() noexcept {
  if (auto* s = current()) s->finish();
  // Note [A signal while the report is made]
  raise_deferred_signal();
}

bool finish_at_signal() noexcept {
  auto* s = current();
  return s == nullptr || s->finish_at_signal();
}

}  // namespace

session& start() {
  std::call_once(start_once, [] {
    const auto config = read_config();
    session* s = nullptr;
    try {
      // Both live until the process ends.
      the_driver = new cuda_driver_queries;
      s = new session(config, *the_driver);
    } catch (const session_input_error& e) {
      fail(e.what(), exit_code::bad_input);
    } catch (const std::exception& e) {
      fail(std::string("cannot start: ") + e.what(), exit_code::cannot_run);
    }
    hide_internal_modules();
    if (!config.result_file.empty()) {
      append_result_line(config.result_file, started_line(::getpid()));
    }
    running.store(s, std::memory_order_release);
    std::atexit(finish_at_exit);
    // Note [Reports when the program dies]
    install_fatal_signal_handlers(finish_at_signal);
  });
  return *running.load(std::memory_order_acquire);
}

session* current() noexcept { return running.load(std::memory_order_acquire); }

void cuda_initialized() {
  session& s = start();
  static std::once_flag once;
  std::call_once(once, [&s] {
    try {
      the_driver->resolve();
    } catch (const std::exception& e) {
      fail(std::string("cannot start: ") + e.what(), exit_code::cannot_run);
    }
    hide_internal_modules();
    try {
      s.start_capture();
    } catch (const std::exception& e) {
      fail(std::string("cannot subscribe to CUDA callbacks: ") + e.what(), exit_code::cannot_run);
    }
  });
}

}  // namespace streamsan::injection::process_session
