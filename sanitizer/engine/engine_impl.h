// The engine's state and rules. Private to sanitizer/engine; the rules are
// split by topic:
//   engine.cpp              public API, dispatch, NVTX, unmodelled calls
//   ordering_rules.cpp      threads, streams, events, host synchronization
//   context_retirement.cpp  stream destroy, thread exit, reuse of their slots
//   memory_rules.cpp        allocations, frees, accesses, launches, copies
//   graph_rules.cpp         stream capture, graph instantiation and launch
//   engine_reports.cpp      turning conflicts into diagnostics, their causes
//   engine_timeline.cpp     the operation window for race timelines
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
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
#include "sanitizer/engine/near_misses.h"
#include "sanitizer/engine/nvtx_paths.h"
#include "sanitizer/engine/operation_window.h"
#include "sanitizer/log/log_tables.h"
#include "sanitizer/log/record.h"

namespace streamsan {

class graph_reachability;

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
  record_site last_record;      // for causes (Note [Causes])
  std::uint64_t record_op = 0;  // the record in the operation window
};

struct stored_graph_node {
  graph_node_kind kind = graph_node_kind::kernel;
  string_id name{};
  std::vector<access> accesses;
  stack_id stack{};  // where it was added or captured
  alloc_id memory{};  // mem_alloc, mem_free (Note [Graph allocations])
};

struct stored_graph {
  std::vector<stored_graph_node> nodes;
  bool memory_nodes = false;  // any mem_alloc or mem_free node
  // Note [Graph candidates wait for a launch]: the graph_node_race
  // candidates of the last graph_instantiate, until the graph is launched.
  std::vector<diagnostic> held_candidates;
};

// A diagnostic found while one record is applied, not yet in the log
// (Note [One diagnostic per pair of operations]): a conflict from an access
// history, a use after free or before allocation.
struct pending_diagnostic {
  diagnostic d;
  // The two accesses (for the cause and timeline of a new report, and, with
  // d's operation fields, who they are) and the window's operation then.
  access_entry current;
  access_entry previous;
  std::uint64_t window_op = 0;
  // Conflicts from an access history: later conflicts of the same pair of
  // accesses merge into this one.
  bool merges = false;
  // Conflicts: the offset of d.allocation in its root, and the conflicting
  // bytes in root coordinates (unsorted, possibly overlapping). The first
  // piece is kept inline: most conflicts have one, and the report path
  // allocates nothing for them.
  std::uint64_t root_offset = 0;
  std::uint32_t pieces = 0;
  std::pair<std::uint64_t, std::uint64_t> first_piece;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> more_pieces;
  void add_piece(std::uint64_t begin, std::uint64_t end) {
    if (pieces++ == 0) {
      first_piece = {begin, end};
    } else {
      more_pieces.emplace_back(begin, end);
    }
  }
};

// Fills p.d's conflicting bytes (hull, ranges, counts), relative to its
// allocation, from p's pieces (engine_reports.cpp).
void set_conflict_ranges(pending_diagnostic& p);

class engine_impl {
 public:
  explicit engine_impl(engine_options options);

  void on_record(const record& r);
  // Every record but a launch without an observer (Note [A launch reports
  // its own pending diagnostics], memory_rules.cpp).
  [[gnu::noinline]] void on_other_record(const record& r);
  engine_statistics statistics() const;
  void set_observer(order_observer* observer) noexcept;

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
  // Always inlined: the compiler made it a call on the launch path, 20 of
  // its 59 instructions per launch saving and restoring registers.
  [[gnu::always_inline]] epoch enqueue(thread_state& t, stream_state& s) {
    prepare(t, s);
    return contexts_.tick(*s.context);
  }
  // The host thread's next action (Note [Host actions tick]).
  epoch host_action(thread_state& t) { return contexts_.tick(*t.context); }
  void host_joins_stream(thread_state& t, const stream_state& s) {
    contexts_.join(*t.context, *s.context);
  }
  void host_joins_event(thread_state& t, event_id id, const event_state& e) {
    if (observer_ != nullptr) [[unlikely]] observer_->event_joined(t.context->ref(), id);
    contexts_.join_snapshot(*t.context, e.snapshot, e.source, e.source_version);
  }
  // Checks an event used by a host synchronization (S-EVENT-3, -4, S-GRAPH-1):
  // true when the event's snapshot may be joined. A never-recorded event is
  // reported only when `unrecorded_is_misuse` (Note [Queries of unrecorded
  // events]). `call` remembers the event's record (Note [Causes]).
  bool event_orders_host(const record_header& h, event_id id, operation_kind op,
                         bool unrecorded_is_misuse, ordering_call& call);
  // A host synchronization with event `event` (synchronize or query).
  void host_waits_for_event(const record_header& h, event_id event, operation_kind op,
                            bool complete);
  // ---- dead contexts (Note [Retiring context slots]) ----
  // Destroys the stream's context and remembers the stream for a while.
  void retire_stream(stream_state& s);
  // What the engine keeps per slot for reports (near misses, the window's
  // lane) is dropped when the slot's context dies: a later owner of the
  // slot must not inherit it. `heir`: the floor that stands for it, if any.
  void forget_context(context_slot slot, const execution_context* heir);
  // Reuses the slots of dead contexts that no stored epoch names, when due.
  void sweep_dead_contexts();

  // Note [Graph allocations] (graph_rules.cpp): inside the graph, once, at
  // instantiation; at each launch, the allocations before the nodes'
  // accesses and the frees after them.
  void check_graph_lifetimes(const record_header& h, const graph_instantiate& r,
                             graph_reachability& order);
  access_entry graph_node_entry(const record_header& h, const thread_state& t, epoch when,
                                graph_id graph, std::uint32_t index,
                                const stored_graph_node& node) const;
  void run_graph_memory(const record_header& h, thread_state& t, stream_state& s, graph_id graph,
                        const stored_graph& g, epoch when, graph_node_kind kind);
  void start_capture(stream_state& s, graph_id graph);
  void end_capture(stream_state& s);
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
  void apply_accesses_inline(std::span<const access> accesses, access_entry& entry,
                             const execution_context& context);
  // Note [Many accesses merged in one pass] (access_history.h): from this
  // many accesses on, a launch's runs of one root go to its history at once.
  static constexpr std::size_t batch_threshold = 64;
  // Note [Allocations found before they are checked] (memory_rules.cpp):
  // a launch's accesses are looked up this many at a time.
  static constexpr std::size_t prefetched_accesses = 8;
  // Note [One group of accesses inline] (memory_rules.cpp): at most
  // prefetched_accesses accesses; and a launch with more, or with an
  // observer: apply_accesses_batched, or group after group.
  void apply_access_group(std::span<const access> accesses, access_entry& entry,
                          const execution_context& context, clock_view view);
  [[gnu::noinline]] void apply_long_or_observed(std::span<const access> accesses,
                                                access_entry& entry,
                                                const execution_context& context);
  void apply_accesses_batched(std::span<const access> accesses, access_entry& entry,
                              const execution_context& context);
  std::size_t gather_batch(std::span<const access> accesses, const access_entry& entry,
                           allocation*& root);
  void apply_access(const access& a, access_entry& entry, const execution_context& context);
  // Applies an access that the history's apply_if_ordered did not: its
  // conflicts, if any, reported (Note [The conflicting access out of
  // line], memory_rules.cpp).
  [[gnu::noinline, gnu::cold]] void apply_unordered(const allocation& al, std::uint64_t begin,
                                                    std::uint64_t end, const access_entry& entry,
                                                    const execution_context& context);
  // An access to no known allocation; `counted`: as checked already (Note
  // [Per launch, not per access]).
  [[gnu::noinline, gnu::cold]] void count_untracked(const access& a, bool counted) noexcept;
  // Note [One test for the unusual allocation]: reports a use after free
  // (false: not to be checked further) or before a stream-ordered
  // allocation.
  [[gnu::noinline, gnu::cold]] bool usable(const allocation& al, const access_entry& entry,
                                           const execution_context& context);
  [[gnu::noinline, gnu::cold]] void announce_access(const allocation& a, const access_entry& entry,
                                                     const execution_context& context);
  // `view`: context.clock.view() (Note [One clock view per launch]).
  // `in_launch`: Note [Per launch, not per access] (memory_rules.cpp).
  template <bool in_launch = false>
  void apply_access(const access& a, allocation* al, access_entry& entry,
                    const execution_context& context, clock_view view);
  // A free checks like a write at `context` (Note [Frees check like writes]).
  void check_free(allocation& a, const access_entry& free_op, const execution_context& context);
  void copy(const record_header& h, const memcpy_record& r);
  // A kernel or host function: a stream operation with accesses.
  // `r`: a kernel_launch or a host_func (Note [The record's fields read
  // where they are used]).
  template <class Work>
  void stream_work(const record_header& h, const Work& r, operation_kind op);
  // Stream synchronize, or a stream query that returned `complete`.
  void host_waits_for_stream(const record_header& h, stream_id stream, operation_kind op,
                             bool complete);
  memory_kind effective_kind(memory_kind kind, alloc_id id) const noexcept;

  // ---- reports (engine_reports.cpp) ----
  operation_ref ref_of(const access_entry& e) const noexcept;
  // Note [Kernels that synchronize on the device]
  bool synchronize_on_device(const access_entry& current, const operation_ref& current_ref,
                             const access_entry& previous, const operation_ref& previous_ref) const;
  // Note [Host threads order what the log does not show]
  bool host_may_order(const access_entry& previous, bool& known);
  void report_conflicts(const allocation& a, const access_entry& current,
                        diagnostic_kind lifetime_kind);
  void report_use_after_free(const allocation& a, const access_entry& current);
  void report_use_before_alloc(const allocation& a, const access_entry& current);
  // Returns the diagnostic's id (a repeat's: the first report's).
  std::uint32_t report_sync_error(const record_header& h, diagnostic_kind kind,
                                  operation_kind op, stream_id stream, event_id event);
  std::uint32_t emit(const diagnostic& d) {
    return emit(d, [](diagnostic&) {});
  }
  // Into the log now (after what is pending, to keep the order found); the
  // certainty is fixed here (Note [Candidates and confirmed diagnostics]).
  template <class Enrich>
  std::uint32_t emit(const diagnostic& d, Enrich&& enrich) {
    if (!pending_.empty()) [[unlikely]] report_pending();
    return add_to_log(d, enrich);
  }
  template <class Enrich>
  std::uint32_t add_to_log(diagnostic& d, Enrich& enrich) {
    d.certainty = certainty_of(d.current, d.previous ? &*d.previous : nullptr);
    const auto added = diagnostics_.add(d, enrich);
    if (!added.fresh) ++stats_.duplicate_diagnostics;
    if (added.confirmed) ++stats_.confirmed_candidates;
    return added.id;
  }
  template <class Enrich>
  std::uint32_t add_to_log(const diagnostic& d, Enrich& enrich) {
    diagnostic copy = d;
    return add_to_log(copy, enrich);
  }
  // Races wait in pending_ until the record is applied, then go to the log
  // in the order found (Note [One diagnostic per pair of operations]).
  void defer(const diagnostic& d, const access_entry& current, const access_entry& previous) {
    pending_diagnostic& p = pending_.emplace_back();
    p.d = d;
    p.current = current;
    p.previous = previous;
    p.window_op = current_op_;
  }
  void report_pending();
  // A new race between `current` and `previous`: its cause (Note [Causes])
  // and timeline (Note [Race timelines]).
  void enrich_race(diagnostic& d, const access_entry& current, const access_entry& previous);
  ordering_call ordering_call_of(const record_header& h, const thread_state& t,
                                 operation_kind op) const noexcept;
  static void remember_event(ordering_call& call, const event_state& e) noexcept {
    call.has_source = e.recorded;
    call.source = e.source;
    call.source_stream = e.last_record.stream;
    call.record = e.last_record;
    call.unrecorded = !e.recorded;
  }

  // ---- the operation window (engine_timeline.cpp); only when window_ ----
  timeline_op timeline_op_of(const record_header& h, operation_kind op, context_kind context,
                             stream_id stream, string_id name) const noexcept;
  // An operation on stream `s` issued by `t`, with its issue and
  // default-stream edges; becomes current_op_.
  std::uint64_t window_stream_op(const record_header& h, const thread_state& t,
                                 const stream_state& s, operation_kind op, string_id name,
                                 event_id event = {}, stream_id target = {});
  // An action of host thread `t`; becomes current_op_.
  std::uint64_t window_host_op(const record_header& h, const thread_state& t,
                               operation_kind op, string_id name, event_id event = {},
                               stream_id target = {}, bool not_ready = false);
  // A synchronous copy or memset on `s` returned to the host thread `t`.
  void copy_returns(const record_header& h, const thread_state& t, const stream_state& s,
                    operation_kind op);
  // The host thread joined stream `s` (synchronize, complete query, copy).
  void window_host_joins_stream(const thread_state& t, std::uint64_t host_op,
                                const stream_state& s, timeline_edge_kind kind);

  engine_options options_;
  context_table contexts_;
  allocation_table allocations_;
  id_table<event_id, event_state> events_;
  std::deque<event_id> dead_events_;  // destroyed, oldest first
  std::deque<stream_id> dead_streams_;  // destroyed, oldest first
  id_table<graph_id, stored_graph> graphs_;
  std::vector<stream_state*> capturing_;
  nvtx_paths nvtx_{first_engine_string_id};
  std::vector<history_conflict> conflicts_;  // scratch for one access
  // Scratch of apply_accesses_batched.
  std::vector<access_history::batch_access> batch_;
  std::vector<const allocation*> batch_allocations_;  // of batch_'s accesses
  std::vector<history_conflict> batch_conflicts_;
  std::vector<access_history::conflict_slice> batch_slices_;
  near_misses near_;                          // Note [Near misses are cheap]
  std::unique_ptr<operation_window> window_;  // Note [The window is bounded]
  std::uint64_t current_op_ = 0;              // the window's operation being checked
  std::uint32_t timelines_kept_ = 0;
  std::vector<pending_diagnostic> pending_;  // found while applying one record
  // Note [Host threads order what the log does not show]: what ended host
  // threads had seen, and (rebuilt at most once per checked access) what
  // every host thread has seen so far.
  vector_clock exited_threads_saw_;
  vector_clock host_saw_;

  order_observer* observer_ = nullptr;  // not owned (order_observer.h)

  // The last thread seen: consecutive records usually come from one thread.
  thread_id last_thread_id_{};
  thread_state* last_thread_ = nullptr;
};

}  // namespace streamsan
