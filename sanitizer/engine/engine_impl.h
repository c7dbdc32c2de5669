// The engine's state and rules. Private to sanitizer/engine; the rules are
// split by topic:
//   engine.cpp          public API, dispatch, NVTX, unmodelled calls
//   ordering_rules.cpp  threads, streams, events, host synchronization
//   memory_rules.cpp    allocations, frees, accesses, launches, copies
//   graph_rules.cpp     stream capture, graph instantiation and launch
//   engine_reports.cpp  turning conflicts into diagnostics
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "sanitizer/engine/access_history.h"
#include "sanitizer/engine/allocation_table.h"
#include "sanitizer/engine/context_table.h"
#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/engine/diagnostic_log.h"
#include "sanitizer/engine/engine.h"
#include "sanitizer/engine/id_table.h"
#include "sanitizer/engine/nvtx_paths.h"
#include "sanitizer/log/log_tables.h"
#include "sanitizer/log/record.h"

namespace streamsan {

struct event_state {
  vector_clock snapshot;  // the recording stream's clock (S-EVENT-1)
  context_slot source = 0;
  std::uint64_t source_version = 0;
  std::int32_t device = 0;
  bool device_known = false;  // fixed by the first record (S-EVENT-6)
  bool recorded = false;
  bool destroyed = false;
  bool recorded_in_capture = false;  // its last record was captured
  graph_id capture_graph{};
  std::uint32_t flags = event_flag_none;
};

struct stored_graph_node {
  graph_node_kind kind = graph_node_kind::kernel;
  string_id name{};
  std::vector<access> accesses;
};

struct stored_graph {
  std::vector<stored_graph_node> nodes;
};

class engine_impl {
 public:
  explicit engine_impl(engine_options options);

  void on_record(const record& r);
  engine_statistics statistics() const;

  log_tables tables_;
  diagnostic_log diagnostics_;
  std::map<std::string, std::uint64_t, std::less<>> unmodelled_;
  engine_statistics stats_;

 private:
  // ---- one handler per record kind ----
  void on(const record_header& h, const string_define& r);
  void on(const record_header& h, const stack_define& r);
  void on(const record_header& h, const frame_symbol& r);
  void on(const record_header& h, const thread_start& r);
  void on(const record_header& h, const thread_exit& r);
  void on(const record_header& h, const stream_create& r);
  void on(const record_header& h, const stream_destroy& r);
  void on(const record_header& h, const stream_synchronize& r);
  void on(const record_header& h, const stream_query& r);
  void on(const record_header& h, const stream_wait_stream& r);
  void on(const record_header& h, const device_synchronize& r);
  void on(const record_header& h, const event_create& r);
  void on(const record_header& h, const event_destroy& r);
  void on(const record_header& h, const event_record& r);
  void on(const record_header& h, const event_wait& r);
  void on(const record_header& h, const event_synchronize& r);
  void on(const record_header& h, const event_query& r);
  void on(const record_header& h, const alloc_record& r);
  void on(const record_header& h, const free_record& r);
  void on(const record_header& h, const memcpy_record& r);
  void on(const record_header& h, const memset_record& r);
  void on(const record_header& h, const kernel_launch& r);
  void on(const record_header& h, const host_func& r);
  void on(const record_header& h, const host_access& r);
  void on(const record_header& h, const graph_capture_begin& r);
  void on(const record_header& h, const graph_capture_end& r);
  void on(const record_header& h, const graph_instantiate& r);
  void on(const record_header& h, const graph_launch& r);
  void on(const record_header& h, const nvtx_push& r);
  void on(const record_header& h, const nvtx_pop& r);
  void on(const record_header& h, const nvtx_mark& r);
  void on(const record_header& h, const unmodelled_call& r);

  // ---- contexts ----
  thread_state& thread_of(const record_header& h) {
    if (last_thread_ != nullptr && h.thread == last_thread_id_) [[likely]] return *last_thread_;
    return new_thread_of(h);
  }
  thread_state& new_thread_of(const record_header& h);
  // The stream an operation names; created on first use if no stream_create
  // was seen (Note [Implicit streams]). Reports a destroyed stream.
  stream_state& stream_for(const record_header& h, thread_state& t, stream_id id,
                           operation_kind op) {
    stream_state* s = contexts_.find_stream(id);
    if (s != nullptr && !s->destroyed) [[likely]] return *s;
    return unusual_stream_for(h, t, id, op);
  }
  stream_state& unusual_stream_for(const record_header& h, thread_state& t, stream_id id,
                                   operation_kind op);
  event_state& event_for(event_id id);
  // The event an operation names, or nullptr (reported) when it was destroyed.
  event_state* live_event(const record_header& h, event_id id, stream_id stream,
                          operation_kind op);
  // Host program order, then the default-stream rules: what every operation
  // T issues to S is ordered after (Note [Enqueue]).
  void prepare(thread_state& t, stream_state& s) {
    contexts_.join(*s.context, *t.context);
    contexts_.implicit_sync(s);
  }
  epoch enqueue(thread_state& t, stream_state& s) {
    prepare(t, s);
    return contexts_.tick(*s.context);
  }
  // The host thread's next action (Note [Host actions tick]).
  epoch host_action(thread_state& t) { return contexts_.tick(*t.context); }
  void host_joins_stream(thread_state& t, const stream_state& s) {
    contexts_.join(*t.context, *s.context);
  }
  void host_joins_event(thread_state& t, const event_state& e) {
    contexts_.join_snapshot(*t.context, e.snapshot, e.source, e.source_version);
  }
  // Checks an event used by a host synchronization (S-EVENT-3, -4, S-GRAPH-1):
  // true when the event's snapshot may be joined. A never-recorded event is
  // reported only when `unrecorded_is_misuse` (Note [Queries of unrecorded
  // events]).
  bool event_orders_host(const record_header& h, event_id id, operation_kind op,
                         bool unrecorded_is_misuse);
  void start_capture(stream_state& s, graph_id graph);
  // Pulls `s` into the capture of `graph` if that capture is still going on.
  bool begin_capture(stream_state& s, graph_id graph);

  // ---- accesses ----
  static access_entry entry_for(const record_header& h, const thread_state& t, epoch when,
                                operation_kind op, string_id name) noexcept {
    access_entry e;
    e.when = when;
    e.seq = h.seq;
    e.stack = h.stack;
    e.thread = h.thread;
    e.nvtx = t.nvtx.empty() ? string_id{} : t.nvtx.back();
    e.op = op;
    e.name = name;
    return e;
  }
  void apply_accesses(std::span<const access> accesses, access_entry& entry,
                      const execution_context& context);
  void apply_access(const access& a, access_entry& entry, const execution_context& context);
  // A free checks like a write at `context` (Note [Frees check like writes]).
  void check_free(allocation& a, const access_entry& free_op, const execution_context& context);
  void copy(const record_header& h, const memcpy_record& r);
  // A kernel or host function: a stream operation with accesses.
  void stream_work(const record_header& h, stream_id stream, operation_kind op, string_id name,
                   std::span<const access> accesses);
  // Stream synchronize, or a stream query that returned `complete`.
  void host_waits_for_stream(const record_header& h, stream_id stream, operation_kind op,
                             bool complete);
  memory_kind effective_kind(memory_kind kind, alloc_id id) const noexcept;

  // ---- reports (engine_reports.cpp) ----
  operation_ref ref_of(const access_entry& e) const noexcept;
  void report_conflicts(const allocation& a, const access_entry& current,
                        diagnostic_kind lifetime_kind);
  void report_use_after_free(const allocation& a, const access_entry& current);
  void report_use_before_alloc(const allocation& a, const access_entry& current);
  void report_sync_error(const record_header& h, diagnostic_kind kind, operation_kind op,
                         stream_id stream, event_id event);
  void emit(const diagnostic& d) {
    if (!diagnostics_.add(d)) ++stats_.duplicate_diagnostics;
  }

  engine_options options_;
  context_table contexts_;
  allocation_table allocations_;
  id_table<event_id, event_state> events_;
  std::deque<event_id> dead_events_;  // destroyed, oldest first
  id_table<graph_id, stored_graph> graphs_;
  std::vector<stream_state*> capturing_;
  nvtx_paths nvtx_{first_engine_string_id};
  std::vector<history_conflict> conflicts_;  // scratch for one access

  // The last thread seen: consecutive records usually come from one thread.
  thread_id last_thread_id_{};
  thread_state* last_thread_ = nullptr;
};

}  // namespace streamsan
