#include "runtime/session/session.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "runtime/allocator/caching_allocator_impl.h"
#include "runtime/session/sanitizer_sinks.h"
#include "sanitizer/report/report_input.h"

namespace streamsan::rt {
namespace {

std::mutex lifecycle_mutex;               // initialize / shutdown / lazy start
std::unique_ptr<session> running;         // guarded by lifecycle_mutex
std::atomic<session*> running_fast{nullptr};
std::uint64_t last_session_number = 0;    // guarded by lifecycle_mutex
bool exit_hook_installed = false;         // guarded by lifecycle_mutex

thread_local thread_state this_thread;
thread_local bool in_host_function = false;

// Note [Threads end in the log]
// A host thread that recorded into a session logs thread_exit when it ends,
// so that the engine can retire its clock slot and its per-thread default
// streams (Note [Thread exit], sanitizer/engine). The record comes from the
// destructor of a thread_local made at the thread's first record, so it
// runs after the destructors of thread_locals made later; a record from a
// thread_local made earlier still (rare) comes after it, under a new thread
// id, as from a new thread. The main thread is left out: glibc
// destroys its thread_locals in exit() before the atexit handler that ends
// the session, and static destructors may still call the runtime from it;
// for the log it lives until the process ends. The session is looked up
// under lifecycle_mutex, so a session ending on another thread is never
// used half destroyed.
struct thread_exit_notice {
  std::uint64_t session = 0;  // the session this thread records into, 0: none
  thread_exit_notice() = default;
  thread_exit_notice(const thread_exit_notice&) = delete;
  thread_exit_notice& operator=(const thread_exit_notice&) = delete;
  ~thread_exit_notice();
};
thread_local thread_exit_notice exit_notice;

std::mutex warning_mutex;
warning_handler current_warning_handler;  // empty: stderr

void stop_locked() noexcept {
  running_fast.store(nullptr, std::memory_order_release);
  running.reset();
}

// Note [Reports change the exit status]
// A sanitizer that prints a report and lets the process exit 0 is easy to
// miss in CI. Like ThreadSanitizer (exitcode=66), a sanitizing session that
// reported anything (candidates do not count) ends the process with
// options.exit_code_on_report once the summary is printed; _Exit skips the
// remaining atexit handlers, which is what TSan does too. Explicit shutdown() calls (tests, the harness)
// never exit.
void finish_at_exit() noexcept {
  int status = 0;
  {
    std::lock_guard lock(lifecycle_mutex);
    if (running && running->sinks && running->options.sanitize &&
        running->options.exit_code_on_report != 0 &&
        confirmed_count(running->sinks->diagnostics()) > 0) {
      status = running->options.exit_code_on_report;
    }
    stop_locked();
  }
  if (status != 0) {
    std::fflush(nullptr);
    std::_Exit(status);
  }
}

thread_exit_notice::~thread_exit_notice() {
  if (session == 0 || ::gettid() == ::getpid()) return;
  try {
    std::lock_guard lifecycle(lifecycle_mutex);
    if (!running || running->number != session || !running->logging()) return;
    std::lock_guard lock(running->mutex);
    running->log.thread_exited();
  } catch (const std::exception& e) {
    warn(std::string("streamsan: logging the end of a thread: ") + e.what());
  }
}

void start_locked(const runtime_options& options) {
  stop_locked();
  running = std::make_unique<session>(options, ++last_session_number);
  running_fast.store(running.get(), std::memory_order_release);
  if (!exit_hook_installed) {
    // The sanitizer summary is printed, and the trace closed, at exit.
    std::atexit(finish_at_exit);
    exit_hook_installed = true;
  }
}

}  // namespace

// ---- lifecycle ----

session::session(const runtime_options& opts, std::uint64_t n)
    : options(opts),
      number(n),
      device(make_backend(opts.backend, opts.sim)),
      // Room for the runtime's own frames, which reports fold, above the
      // program's.
      log(recorder_options{.capture_stacks = opts.capture_stacks, .stack_depth = 24}) {
  device_count = device->device_count();
  legacy.assign(static_cast<std::size_t>(device_count), stream_id{});
  join_events.assign(static_cast<std::size_t>(device_count), std::nullopt);
  sync_debug.store(opts.sync_debug);
  allocator = std::make_unique<caching_allocator_impl>(*this);
  if (opts.sanitize || !opts.trace_path.empty()) {
    sinks = std::make_unique<sanitizer_sinks>(opts);
    sinks->attach(log);
    set_logging(true);
  }
}

session::~session() {
  // The allocator's last records (segment frees) still reach the sinks.
  try {
    std::lock_guard lock(mutex);
    allocator->release_all();
  } catch (const std::exception& e) {
    std::cerr << "streamsan: releasing the caching allocator at shutdown: " << e.what() << '\n';
  }
  allocator.reset();
  if (sinks) {
    sinks->detach(log);
    sinks->finish();
  }
  sinks.reset();
  device.reset();
}

void initialize(const runtime_options& options) {
  std::lock_guard lock(lifecycle_mutex);
  start_locked(options);
}

void shutdown() noexcept {
  std::lock_guard lock(lifecycle_mutex);
  stop_locked();
}

bool initialized() noexcept { return running_fast.load(std::memory_order_acquire) != nullptr; }

session& enter() {
  if (in_host_function) {
    throw usage_error(
        "a host function called the streamsan API: host functions must not make CUDA calls "
        "(S-HOSTFN-1)");
  }
  if (auto* s = running_fast.load(std::memory_order_acquire)) return *s;
  std::lock_guard lock(lifecycle_mutex);
  if (!running) start_locked(options_from_environment());
  return *running;
}

session* existing_session() noexcept { return running_fast.load(std::memory_order_acquire); }

void note_recording_thread(std::uint64_t number) noexcept {
  if (exit_notice.session != number) exit_notice.session = number;
}

session* session_if(std::uint64_t number) noexcept {
  auto* s = existing_session();
  return s != nullptr && s->number == number ? s : nullptr;
}

const runtime_options& current_options() { return enter().options; }

std::string_view backend_name() { return enter().device->name(); }

backend& current_backend() { return *enter().device; }

// ---- host functions ----

host_function_scope::host_function_scope() noexcept : previous_(in_host_function) {
  in_host_function = true;
}

host_function_scope::~host_function_scope() noexcept { in_host_function = previous_; }

// ---- warnings ----

void set_warning_handler(warning_handler handler) {
  std::lock_guard lock(warning_mutex);
  current_warning_handler = std::move(handler);
}

void warn(std::string_view message) {
  std::lock_guard lock(warning_mutex);
  if (current_warning_handler) {
    current_warning_handler(message);
  } else {
    std::cerr << message << '\n';
  }
}

// ---- lookups ----

thread_state& session::thread() {
  if (this_thread.session != number) {
    this_thread = thread_state{};
    this_thread.session = number;
    this_thread.current.assign(static_cast<std::size_t>(device_count), stream_id{});
    this_thread.per_thread.assign(static_cast<std::size_t>(device_count), stream_id{});
  }
  return this_thread;
}

int session::resolve_device(int d, const describe& what) {
  if (d == -1) return thread().device;
  if (d < 0 || d >= device_count) {
    throw usage_error(what() + ": device " + std::to_string(d) + " does not exist (" +
                      std::to_string(device_count) + " visible)");
  }
  return d;
}

stream_state& session::stream(const stream_ref& s, const describe& what) {
  if (s.is_none()) throw usage_error(what() + ": no stream (an empty stream_ref)");
  if (stream_access::session_of(s) != number) {
    throw usage_error(what() + ": " + s.name() + " belongs to a runtime session that has ended");
  }
  const auto it = streams.find(s.id());
  if (it == streams.end()) throw usage_error(what() + ": " + s.name() + " was destroyed");
  return it->second;
}

event_state& session::event(const event_ref& e, const describe& what) {
  if (e.is_none()) throw usage_error(what() + ": no event (an empty event_ref)");
  if (event_access::session_of(e) != number) {
    throw usage_error(what() + ": " + e.name() + " belongs to a runtime session that has ended");
  }
  const auto it = events.find(e.id());
  if (it == events.end()) throw usage_error(what() + ": " + e.name() + " was destroyed");
  return it->second;
}

stream_state& session::add_stream(int d, stream_flavor flavor, int priority, stream_handle handle,
                                  bool owned) {
  const auto id = log.new_stream_id();
  auto& s = streams[id];
  s = stream_state{id, d, flavor, priority, handle, owned, graph_id{}};
  if (logging()) emit(stream_create{id, d, flavor, priority});
  return s;
}

stream_state& session::legacy_stream(int d) {
  auto& id = legacy[static_cast<std::size_t>(d)];
  if (is_none(id)) {
    id = add_stream(d, stream_flavor::legacy_default, 0, device->legacy_default_stream(d), false).id;
  }
  return streams.at(id);
}

stream_state& session::per_thread_stream(int d) {
  auto& id = thread().per_thread[static_cast<std::size_t>(d)];
  if (is_none(id)) {
    id = add_stream(d, stream_flavor::per_thread_default, 0, device->per_thread_default_stream(d),
                    false)
             .id;
  }
  return streams.at(id);
}

stream_state& session::default_stream(int d) {
  return options.per_thread_default_stream ? per_thread_stream(d) : legacy_stream(d);
}

stream_state& session::current_stream(int d) {
  const auto id = thread().current[static_cast<std::size_t>(d)];
  if (!is_none(id)) {
    if (const auto it = streams.find(id); it != streams.end()) return it->second;
    throw usage_error("current stream of device " + std::to_string(d) + ": " + to_string(id) +
                      " was destroyed while current");
  }
  return default_stream(d);
}

// ---- rules ----

void session::check_sync(const describe& what) {
  switch (sync_debug.load(std::memory_order_relaxed)) {
    case sync_debug_mode::off:
      return;
    case sync_debug_mode::warn:
      warn("streamsan: warning: synchronizing operation: " + what());
      return;
    case sync_debug_mode::error:
      throw sync_debug_error(what() +
                             ": a synchronizing operation, refused by sync debug mode 'error'");
  }
}

runtime_capture* session::capture_of(const stream_state& s) {
  if (is_none(s.capture)) return nullptr;
  const auto it = graphs.find(s.capture);
  return it == graphs.end() ? nullptr : it->second.capture.get();
}

void session::check_implicit_capture(const stream_state& s, const describe& what) {
  if (active_captures == 0 || s.flavor != stream_flavor::legacy_default) return;
  for (const auto& [id, other] : streams) {
    if (other.device != s.device || !other.blocking() || is_none(other.capture)) continue;
    auto& g = graphs.at(other.capture);
    if (g.mode != capture_mode::global) continue;
    g.invalidated = true;
    throw usage_error(what() + ": work on the legacy default stream would synchronize implicitly "
                      "with " + to_string(other.id) + ", which is capturing " + to_string(g.id) +
                      "; the capture is invalidated");
  }
}

void session::forbid_during_capture(const stream_state& s, const describe& what) {
  if (is_none(s.capture)) return;
  auto& g = graphs.at(s.capture);
  g.invalidated = true;
  throw usage_error(what() + ": " + to_string(s.id) + " is capturing " + to_string(g.id) +
                    "; synchronizing with a capturing stream is not allowed (S-GRAPH-1); the "
                    "capture is invalidated");
}

void session::forbid_device_sync_during_capture(int d, const describe& what) {
  if (active_captures == 0) return;
  for (const auto& [id, s] : streams) {
    if (s.device == d && !is_none(s.capture)) forbid_during_capture(s, what);
  }
}

void session::add_capture_node(stream_state& s, graph_node_kind kind, std::string_view name,
                               std::span<const access> accesses) {
  auto* capture = capture_of(s);
  // The node's stack is the capturing call's (Note [Stacks start at the
  // user] folds the runtime's own frames), so a graph-node race shows where
  // each node came from rather than the instantiation.
  const stack_id stack = logging() ? log.capture_stack() : stack_id{};
  capture->add_node(s.id, capture_node{kind, std::string(name),
                                       std::vector<access>(accesses.begin(), accesses.end()),
                                       stack});
}

event_handle session::join_event(int d) {
  auto& e = join_events[static_cast<std::size_t>(d)];
  if (!e) e = device->create_event(d, event_flag_none);
  return *e;
}

}  // namespace streamsan::rt
