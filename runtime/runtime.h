// Starting, configuring and stopping the runtime.
//
// Note [One runtime per process, restartable]
// The runtime is a process-wide object: a backend, a recorder (ids and the
// access log), the registries of live streams, events and allocations, and
// the caching allocator. The first API call starts it from the environment
// (options_from_environment); initialize() starts it explicitly and
// replaces a running one, which is how tests pick a backend or a sim seed.
// Each start is a new session: objects of an earlier session (streams,
// events, buffers, graphs) are dead; using one throws usage_error, and
// their destructors do nothing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/backend/backend.h"
#include "runtime/sync_debug.h"
#include "sanitizer/report/color.h"

namespace streamsan::rt {

struct runtime_options {
  backend_kind backend = backend_kind::automatic;  // STREAMSAN_BACKEND
  sim_options sim;  // STREAMSAN_SIM_SEED, STREAMSAN_SIM_POLICY=eager|random
  // default_stream() is the calling thread's per-thread default stream
  // instead of the legacy one (nvcc --default-stream per-thread;
  // STREAMSAN_DEFAULT_STREAM=per-thread|legacy).
  bool per_thread_default_stream = false;
  // Sanitizer mode (STREAMSAN=1): a live engine checks the access log and
  // prints each diagnostic when found, and a summary at shutdown.
  bool sanitize = false;
  // Also write the access log to this trace file (STREAMSAN_TRACE=path),
  // for `streamsan analyze`. Empty: none.
  std::string trace_path;
  // Call stacks on every record (STREAMSAN_STACKS=0 turns them off).
  bool capture_stacks = true;
  sync_debug_mode sync_debug = sync_debug_mode::off;  // STREAMSAN_SYNC_DEBUG=off|warn|error
  // Sanitizer mode: print diagnostics as found and the summary (to stderr).
  bool print_diagnostics = true;
  // Sanitizer mode: when anything was reported, the process ends with this
  // status at exit, as ThreadSanitizer's exitcode does (STREAMSAN_EXITCODE;
  // 0 keeps the program's own status). See Note [Reports change the exit
  // status].
  int exit_code_on_report = 66;
  // Sanitizer mode's reports: colour (STREAMSAN_COLOR=auto|always|never;
  // auto: when stderr is a terminal), the program's frames shown per stack
  // (STREAMSAN_STACK_DEPTH, 0 = all recorded), every frame unfolded
  // (STREAMSAN_RAW_STACKS=1). See docs/reports.md.
  color_mode report_color = color_mode::automatic;
  std::uint32_t report_stack_depth = 0;
  bool raw_stacks = false;
};

// The options the environment variables above describe; throws usage_error
// naming the variable for a malformed value.
runtime_options options_from_environment();

// (Re)starts the runtime; see Note [One runtime per process, restartable].
// Ends a running session first (as shutdown() does).
void initialize(const runtime_options& options);

// Ends the session: prints the sanitizer summary (sanitizer mode), closes
// the trace file, frees the caching allocator's segments and destroys the
// backend. Live owners become dead objects. Safe to call when not started.
void shutdown() noexcept;

bool initialized() noexcept;

// The options of the running session (starting it if needed).
const runtime_options& current_options();

// "sim" or "cuda".
std::string_view backend_name();

// The backend of the running session, for tests and tools that need a call
// the runtime does not wrap. Work issued directly is invisible to the
// sanitizer.
backend& current_backend();

}  // namespace streamsan::rt
