// What the engine found, as plain data. Printing (text, JSON, SARIF) lives in
// sanitizer/report and never feeds back into detection, in the manner of
// ThreadSanitizer's ReportDesc / PrintReport split.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "sanitizer/log/ids.h"
#include "sanitizer/log/record.h"

namespace streamsan {

enum class diagnostic_kind : std::uint8_t {
  // Two device accesses on different streams, unordered, one a write.
  stream_race,
  // A host access and a device access, unordered, one a write.
  host_device_race,
  // Two nodes of one graph with no dependency path, one a write (S-GRAPH-2).
  graph_node_race,
  // A free (cudaFree without sync coverage, cudaFreeHost, cudaFreeAsync)
  // while an unordered stream still uses the memory.
  free_while_in_use,
  // An access to an allocation that was already freed.
  use_after_free,
  // An access to a stream-ordered allocation that is not ordered after the
  // cudaMallocAsync that created it (S-MEM-5).
  use_before_alloc,
  // Wait, synchronize or query on an event never recorded: it orders
  // nothing (S-EVENT-3).
  unrecorded_event,
  // An operation names a stream or event that was destroyed (S-STREAM-9).
  destroyed_stream_use,
  destroyed_event_use,
  // A synchronizing call while a stream is capturing (S-GRAPH-1).
  sync_during_capture,
  // An event recorded on a stream of another device (S-EVENT-6).
  event_device_mismatch,
};

inline constexpr int diagnostic_kind_count = 11;

// Read-after-write etc., from the point of view of the current access. An
// atomic counts as a write here (an atomic after a plain read is a
// write-after-read); reports name the access kinds themselves
// (Note [Atomics are their own access kind], sanitizer/log/record.h).
enum class hazard : std::uint8_t {
  none,
  read_after_write,
  write_after_read,
  write_after_write,
};

// The hazard of an access with mode `current` against an earlier one with
// mode `previous`, when they conflict (conflicts(current, previous)).
constexpr hazard hazard_between(access_mode current, access_mode previous) noexcept {
  const bool current_writes = writes(current) || is_atomic(current);
  const bool previous_writes = writes(previous) || is_atomic(previous);
  if (current_writes) return previous_writes ? hazard::write_after_write : hazard::write_after_read;
  return previous_writes ? hazard::read_after_write : hazard::none;
}

// Note [Candidates and confirmed diagnostics]
// A report is a promise, so a diagnostic is confirmed only when both
// footprints it rests on are known: `exact` (the API's own extent, a
// declared access, an annotation) or `measured` (instrumented). When either
// side's footprint was `inferred` (guessed from kernel parameters), the
// conflict may be the guess's and not the program's: it is a candidate. A
// front end does not print candidates as warnings; it measures the kernels
// named by the inferred sides on their next launches, and a measured
// conflict at the same pair of call sites confirms the candidate
// (Note [Deduplication] in diagnostic_log.h). Candidates never confirmed are
// listed at exit as possible races, without the error exit status.
enum class diagnostic_certainty : std::uint8_t {
  confirmed,
  candidate,
};

// Where an operation executed.
enum class context_kind : std::uint8_t {
  stream,
  host_thread,
};

enum class operation_kind : std::uint8_t {
  kernel,
  memcpy,
  // The device write of a synchronous pageable -> device cudaMemcpy: its DMA
  // may still run when the call returns (S-COPY-1; Note [Staged uploads]).
  staged_upload,
  memset,
  host_func,
  host_access,
  graph_node,
  alloc,
  free,
  event_record,
  event_wait,
  event_synchronize,
  event_query,
  stream_synchronize,
  stream_query,
  stream_wait_stream,
  device_synchronize,
  stream_destroy,
  event_destroy,
  graph_launch,
};

// A byte range relative to an allocation.
struct byte_interval {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  friend bool operator==(const byte_interval&, const byte_interval&) = default;
};

// One side of a diagnostic.
struct operation_ref {
  std::uint64_t seq = 0;  // record sequence number
  operation_kind op = operation_kind::kernel;
  context_kind context = context_kind::stream;
  stream_id stream{};   // context == stream (also a graph's launch stream)
  thread_id thread{};   // the issuing host thread
  string_id name{};     // kernel / host function / graph node name, label
  // The accesses of this operation that take part in the conflict: their
  // modes as recorded (united when several accesses of the operation take
  // part), where their extent comes from, and their hull in `alloc`.
  access_mode mode = access_mode::read;
  access_origin origin = access_origin::exact;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  stack_id stack{};
  string_id nvtx_range{};  // innermost active NVTX range, "" when none
  graph_id graph{};        // op == graph_node
  std::uint32_t graph_node = 0;
  // The allocation the operation accessed; offset/size are relative to it.
  // It differs from diagnostic::allocation when a caching allocator handed
  // the same bytes out again as another block (S-MEM-1).
  alloc_id alloc{};
};

struct allocation_ref {
  alloc_id id{};
  memory_kind kind = memory_kind::device;
  std::int32_t device = 0;
  std::uint64_t size = 0;
  std::uint64_t address = 0;
  string_id label{};
  stack_id site{};  // where it was allocated
  std::uint64_t alloc_seq = 0;
  bool freed = false;
  stack_id free_site{};
};

// Note [Causes]
// A race means an ordering is missing. Often the program did try to order
// the two operations and the call it used ordered something else, or
// nothing; pointing at that call is the most useful thing a report can do.
// The engine remembers, per stream and host thread, the last ordering call
// that could have been meant (sanitizer/engine/near_misses.h), and when a
// race is found, it checks whether that call explains the missing order.
// Only facts the log shows are named: the cause is the call, what it named,
// and why that did not order the producer.
enum class cause_kind : std::uint8_t {
  // The consumer waited on (or the host synchronized with) an event that
  // was never recorded: a no-op (S-EVENT-3).
  unrecorded_event,
  // The host synchronized a stream, or an event recorded on a stream, that
  // is not the producer's.
  synchronized_other_stream,
  // The consumer stream waited for an event, or a stream, that is not the
  // producer's.
  waited_other_stream,
  // A query of the producer's stream or of an event on it returned
  // not-ready, and the host went on anyway (S-SYNC-2).
  query_not_ready,
  // The event waited for was recorded on the producer's stream before the
  // producer's work was enqueued there, so it does not cover it (S-EVENT-1).
  event_recorded_before_producer,
  // A host function runs on a stream that is not ordered after the other
  // operation (S-HOSTFN-1: it is ordered by its own stream only).
  host_function_on_other_stream,
};

inline constexpr int cause_kind_count = 6;

struct ordering_cause {
  cause_kind kind = cause_kind::unrecorded_event;
  // The call that did not order the two operations (a wait, synchronize,
  // query, or the host function's launch).
  operation_ref call;
  event_id event{};       // the event it named, if any
  stream_id named{};      // the stream it named (or the event's recording stream)
  // The event's last record before the call, when the event was recorded.
  std::optional<operation_ref> record;
  // The diagnostic that reported the call itself (an unrecorded-event
  // warning); 0 when none.
  std::uint32_t reported_as = 0;
};

// Where a graph-node race's graph came from and how its two nodes hang
// together: the dependency edge previous -> current is missing.
struct graph_node_ref {
  std::uint32_t index = 0;
  string_id name{};
};

struct graph_gap {
  stack_id instantiated{};                     // where the graph was instantiated
  std::uint32_t node_count = 0;
  std::vector<graph_node_ref> previous_depends_on;  // direct dependencies
  std::vector<graph_node_ref> current_depends_on;
};

// Note [Race timelines]
// A picture of the operations around a race, for the HTML report and the
// Chrome trace: the operations in issue order, each in its lane (a stream
// or a host thread), and the happens-before edges between them that the
// engine applied. The engine keeps a bounded window of recent operations
// (sanitizer/engine/operation_window.h) and copies the part that ends at
// the race into the diagnostic; the missing edge is previous -> current.
enum class timeline_edge_kind : std::uint8_t {
  issue,           // host program order: the thread issued the operation after its action
  event,           // an event record, then a wait / synchronize / complete query
  stream_sync,     // stream synchronize, or a query that returned complete
  wait_stream,     // wait_stream: the waiter joins the waited stream
  device_sync,     // device synchronize joins every stream of the device
  default_stream,  // the legacy default stream's implicit synchronization
  copy_return,     // a synchronous copy or memset returns to the host
  graph_dependency,
};

struct timeline_op {
  std::uint64_t seq = 0;
  operation_kind op = operation_kind::kernel;
  context_kind context = context_kind::stream;  // the lane
  stream_id stream{};
  thread_id thread{};
  string_id name{};
  stack_id stack{};
  event_id event{};     // record / wait / event synchronize / query
  stream_id target{};   // stream synchronize / query, wait_stream's waited stream
  graph_id graph{};
  std::uint32_t graph_node = 0;
  bool not_ready = false;  // a query that returned not-ready
};

struct timeline_edge {
  std::uint32_t from = 0;  // indices into race_timeline::ops
  std::uint32_t to = 0;
  timeline_edge_kind kind = timeline_edge_kind::issue;
};

struct race_timeline {
  std::vector<timeline_op> ops;  // issue order
  std::vector<timeline_edge> edges;
  std::uint32_t previous = 0;    // index of the earlier conflicting operation
  std::uint32_t current = 0;     // index of the later one
  bool graph = false;            // the ops are one graph's nodes
  // Operations between `previous` and the next one shown that were left
  // out; when the previous operation had left the window altogether, their
  // number is unknown and previous_outside_window is set.
  std::uint64_t omitted = 0;
  bool previous_outside_window = false;
};

struct diagnostic {
  diagnostic_kind kind = diagnostic_kind::stream_race;
  hazard hazard_kind = hazard::none;
  operation_ref current;                  // the access that found the problem
  std::optional<operation_ref> previous;  // the earlier, conflicting one
  std::optional<allocation_ref> allocation;
  // Note [Candidates and confirmed diagnostics]
  diagnostic_certainty certainty = diagnostic_certainty::confirmed;
  // The bytes in conflict, relative to the allocation: their hull, and,
  // when there are several, the exact ranges (sorted, disjoint, not
  // adjacent); with one, `ranges` is empty and the hull is the range
  // (conflict_ranges() gives the list either way). The same bytes for both
  // sides; the previous side's own allocation may be another block over
  // them (operation_ref::alloc). At most max_listed_ranges are listed;
  // range_count and conflict_bytes count all of them (0: as many as listed,
  // for a diagnostic built by hand).
  std::uint64_t overlap_offset = 0;
  std::uint64_t overlap_size = 0;
  std::vector<byte_interval> ranges;
  std::uint64_t range_count = 0;
  std::uint64_t conflict_bytes = 0;
  // The object a synchronization error is about.
  event_id event{};
  stream_id stream{};
  // Identical reports (kind + pair of call sites) are folded into one.
  std::uint32_t count = 1;
  // 1, 2, ... in the order found (before suppressions), so that reports can
  // refer to each other.
  std::uint32_t id = 0;
  // Races: the call that failed to order the two operations (Note [Causes]).
  std::optional<ordering_cause> cause;
  // Ordering errors (unrecorded-event): the races this call failed to
  // prevent, by id.
  std::vector<std::uint32_t> failed_to_prevent;
  // graph_node_race: the graph's structure around the two nodes.
  std::optional<graph_gap> graph;
  // Races, when the engine keeps a timeline window (Note [Race timelines]).
  std::shared_ptr<const race_timeline> timeline;
};

inline constexpr std::size_t max_listed_ranges = 16;

constexpr bool is_candidate(const diagnostic& d) noexcept {
  return d.certainty == diagnostic_certainty::candidate;
}

// Note [Staged uploads]
// A synchronous cudaMemcpy from pageable memory returns once the source is
// staged; "the DMA to final destination may not have completed" (S-COPY-1),
// and nothing orders that DMA with non-blocking streams. Programs everywhere
// (cuda-samples' StreamPriorities among them) use the data on another
// stream right after the call, and no driver has been seen to let them
// down. The documentation does not promise it, so the race is real by the
// book; no run has shown it, so it is not a promise either: it is a
// possible race with its own reason, never measured (there is nothing to
// measure) and never in the exit status.
// Only when the upload is the earlier side and the later one was issued by
// the same thread after the call returned: had the DMA finished by then, it
// would be ordered. Anything unordered with the upload itself stays a race.
constexpr bool rests_on_staged_upload(const operation_ref& current,
                                      const operation_ref* previous) noexcept {
  return previous != nullptr && previous->op == operation_kind::staged_upload &&
         current.thread == previous->thread;
}

// The certainty a conflict between these sides has: candidate when either
// footprint was inferred, or when one side is a staged upload's DMA.
constexpr diagnostic_certainty certainty_of(const operation_ref& current,
                                            const operation_ref* previous) noexcept {
  const bool inferred = current.origin == access_origin::inferred ||
                        (previous != nullptr && previous->origin == access_origin::inferred);
  return inferred || rests_on_staged_upload(current, previous) ? diagnostic_certainty::candidate
                                                               : diagnostic_certainty::confirmed;
}

// The sides of a diagnostic whose footprint was inferred (current first):
// the operations to measure to confirm or refute a candidate. Empty for a
// confirmed diagnostic.
std::vector<const operation_ref*> inferred_sides(const diagnostic& d);

// The listed conflicting ranges; one range, the hull, when none are listed.
// Empty when no bytes conflict (sync errors, use-after-free, ...).
std::vector<byte_interval> conflict_ranges(const diagnostic& d);
// How many ranges and bytes conflict in all (listed or not).
std::uint64_t conflict_range_count(const diagnostic& d) noexcept;
std::uint64_t conflict_byte_count(const diagnostic& d) noexcept;

// Stable short names, used as SARIF rule ids, JSON values and suppression
// categories.
std::string_view to_string(diagnostic_kind kind) noexcept;
std::string_view to_string(hazard h) noexcept;
std::string_view to_string(operation_kind op) noexcept;
std::string_view to_string(memory_kind kind) noexcept;
std::string_view to_string(access_mode mode) noexcept;
std::string_view to_string(access_origin origin) noexcept;
std::string_view to_string(diagnostic_certainty certainty) noexcept;
std::string_view to_string(cause_kind kind) noexcept;
std::string_view to_string(timeline_edge_kind kind) noexcept;

// Races are suppressed by "race:" lines, everything else by "sync:" lines.
bool is_race(diagnostic_kind kind) noexcept;

}  // namespace streamsan
