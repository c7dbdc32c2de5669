// The runtime's process-wide state for one session (see Note [One runtime
// per process, restartable] in runtime/runtime.h): the backend, the
// recorder, the registries of live objects, the graph captures and the
// caching allocator. Internal to runtime/*.cpp.
//
// Note [One mutex orders the runtime]
// Every API call validates its arguments against the registries, calls the
// backend and emits its record while holding session::mutex, so that the
// order of records in the log is the order in which the backend saw the
// calls, whichever host threads made them (a wait must never be logged
// before the record it waits for). Calls that only wait (stream, event and
// device synchronize) release the mutex around the backend call so that
// other threads can keep issuing work, and emit their record after the
// backend returns, which is when the host became ordered after the work.
// Calls that enqueue work and then wait (a synchronous copy, cudaFree) keep
// the mutex: their place in stream order must be their place in the log.
// The sim backend additionally has its own mutex; the lock order is always
// session -> backend -> recorder.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "runtime/backend/backend.h"
#include "runtime/capture/capture_builder.h"
#include "runtime/event.h"
#include "runtime/runtime.h"
#include "runtime/stream.h"
#include "runtime/sync_debug.h"
#include "sanitizer/log/recorder.h"

namespace streamsan::rt {

class caching_allocator_impl;
class sanitizer_sinks;

// Describes the current call for an error message ("recording event#3 on
// stream#1"); built only when an error is thrown. A non-owning reference
// to a callable, so that the hot path allocates nothing.
class describe {
 public:
  template <class F>
    requires std::is_invocable_r_v<std::string, const F&>
  describe(const F& f) noexcept  // NOLINT: implicit on purpose
      : object_(&f), call_([](const void* o) { return (*static_cast<const F*>(o))(); }) {}
  std::string operator()() const { return call_(object_); }

 private:
  const void* object_;
  std::string (*call_)(const void*);
};

// Builds refs and owners; the only code that touches their protected parts.
struct stream_access {
  static stream_ref make(stream_id id, int device, std::uint64_t session) noexcept {
    return stream_ref(id, device, session);
  }
  static std::uint64_t session_of(const stream_ref& s) noexcept { return s.session_; }
};

struct event_access {
  static event_ref make(event_id id, std::uint64_t session) noexcept {
    return event_ref(id, session);
  }
  static std::uint64_t session_of(const event_ref& e) noexcept { return e.session_; }
};

struct stream_state {
  stream_id id{};
  int device = 0;
  stream_flavor flavor = stream_flavor::blocking;
  int priority = 0;
  stream_handle handle{};
  bool owned = false;    // destroyed through the backend when released
  graph_id capture{};    // the capture it takes part in, none otherwise

  device_stream target() const noexcept { return {device, handle}; }
  bool blocking() const noexcept {
    switch (flavor) {
      case stream_flavor::blocking:
      case stream_flavor::per_thread_default:
        return true;
      case stream_flavor::non_blocking:
      case stream_flavor::legacy_default:
        return false;
    }
    return false;
  }
};

struct event_state {
  event_id id{};
  std::uint32_t flags = event_flag_none;
  std::optional<int> device;            // set at the first record (S-EVENT-6)
  std::optional<event_handle> handle;   // created at the first record
  bool recorded = false;                // recorded outside a capture
  graph_id capture{};                   // the latest record was captured there
};

struct allocation_state {
  memory_kind kind = memory_kind::device;
  int device = 0;
  void* data = nullptr;
  std::uint64_t size = 0;
  stream_id stream{};  // stream_ordered: the allocating stream
};

// One node of a capture, as the log will describe it.
struct capture_node {
  graph_node_kind kind = graph_node_kind::kernel;
  std::string name;
  std::vector<access> accesses;
  stack_id stack{};  // the capturing call, for graph_node::stack
};

using runtime_capture = capture_builder<stream_id, event_id, capture_node>;

struct graph_state {
  graph_id id{};
  std::unique_ptr<runtime_capture> capture;  // while capturing
  stream_id origin{};
  int device = 0;
  capture_mode mode = capture_mode::global;
  bool invalidated = false;  // a forbidden call during capture (S-GRAPH-1)
  std::optional<graph_handle> graph;
  std::optional<graph_exec_handle> exec;
  std::size_t nodes = 0;
  std::size_t edges = 0;
};

// Per host thread, per session.
struct thread_state {
  std::uint64_t session = 0;
  int device = 0;
  std::vector<stream_id> current;     // per device; none = default stream
  std::vector<stream_id> per_thread;  // per device; none = not made yet
  int nvtx_depth = 0;
};

// The calling thread records into session `number`: it will log its
// thread_exit when it ends (Note [Threads end in the log], session.cpp).
void note_recording_thread(std::uint64_t number) noexcept;

class session {
 public:
  session(const runtime_options& options, std::uint64_t number);
  ~session();
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  // ---- configuration ----
  const runtime_options options;
  const std::uint64_t number;
  std::unique_ptr<rt::backend> device;
  int device_count = 0;
  std::atomic<sync_debug_mode> sync_debug{sync_debug_mode::off};

  // ---- the access log (see Note [Instrumentation costs one branch when off]) ----
  recorder log;
  bool logging() const noexcept { return logging_.load(std::memory_order_relaxed); }
  void set_logging(bool on) noexcept { logging_.store(on, std::memory_order_relaxed); }
  // Emits `body` with the whole stack of the call: reports fold the
  // runtime's own frames into one line naming the call ("launch of
  // fill<<<…>>> from main at app.cpp:12", Note [Stacks start at the user]
  // in sanitizer/report/frame_kind.h), whatever the compiler inlined.
  void emit(const record_body& body) {
    note_recording_thread(number);
    log.emit(body);
  }
  string_id intern(std::string_view text) { return log.intern(text); }

  // ---- state, guarded by mutex ----
  std::mutex mutex;
  std::unordered_map<stream_id, stream_state> streams;
  std::unordered_map<event_id, event_state> events;
  std::unordered_map<alloc_id, allocation_state> allocations;
  std::unordered_map<graph_id, graph_state> graphs;
  std::vector<stream_id> legacy;  // per device; none until first used
  std::vector<std::optional<event_handle>> join_events;  // per device, for wait_stream
  int active_captures = 0;
  std::unique_ptr<caching_allocator_impl> allocator;
  std::unique_ptr<sanitizer_sinks> sinks;

  // ---- lookups; mutex held. `what` describes the call for messages. ----
  int resolve_device(int device, const describe& what);
  stream_state& stream(const stream_ref& s, const describe& what);
  event_state& event(const event_ref& e, const describe& what);
  stream_state& legacy_stream(int device);
  stream_state& per_thread_stream(int device);
  stream_state& default_stream(int device);
  stream_state& current_stream(int device);
  stream_ref ref(const stream_state& s) const noexcept {
    return stream_access::make(s.id, s.device, number);
  }
  thread_state& thread();

  // Registers a stream the backend made (or owns) and logs stream_create.
  stream_state& add_stream(int device, stream_flavor flavor, int priority, stream_handle handle,
                           bool owned);

  // ---- rules checked before reaching the backend ----
  // Sync debug mode (S-SYNC-3) for a call that blocks the host.
  void check_sync(const describe& what);
  // Work on the legacy stream while a blocking stream of the device captures
  // would synchronize with it implicitly (cudaErrorStreamCaptureImplicit).
  void check_implicit_capture(const stream_state& s, const describe& what);
  // A blocking or querying call on a capturing stream / device: invalidates
  // the capture and throws (S-GRAPH-1).
  void forbid_during_capture(const stream_state& s, const describe& what);
  void forbid_device_sync_during_capture(int device, const describe& what);
  runtime_capture* capture_of(const stream_state& s);
  // A capture node of `kind` on capturing `s`.
  void add_capture_node(stream_state& s, graph_node_kind kind, std::string_view name,
                        std::span<const access> accesses);

  // ---- events the runtime records itself (wait_stream, the allocator) ----
  event_handle join_event(int device);

 private:
  std::atomic<bool> logging_{false};
};

// The running session, started from the environment if needed. Also checks
// that the caller is not a host function (S-HOSTFN-1).
session& enter();
// The running session if any, without starting one (for destructors).
session* existing_session() noexcept;
// The session `number` if it is still running, else nullptr.
session* session_if(std::uint64_t number) noexcept;

// Marks the calling thread as running a host function while alive.
class host_function_scope {
 public:
  host_function_scope() noexcept;
  ~host_function_scope() noexcept;
  host_function_scope(const host_function_scope&) = delete;
  host_function_scope& operator=(const host_function_scope&) = delete;

 private:
  bool previous_;
};

// Reports through the warning handler (runtime/sync_debug.h).
void warn(std::string_view message);

}  // namespace streamsan::rt
