// Turning what the rules found into diagnostics (plain data; printing is
// sanitizer/report's business).
//
// Note [Race kinds]
// A conflict between two stream contexts is a stream_race (they are
// different streams: a context is always ordered with itself). A conflict
// with a host thread on one side is a host_device_race. Two host threads are
// not CUDA's business: their accesses may be ordered by locks the log never
// shows, which ThreadSanitizer sees and streamsan does not, so such pairs are
// only counted (engine_statistics::host_host_conflicts).
//
// Note [One diagnostic per pair of operations]
// A kernel's footprint is a list of accesses: one per buffer for a declared
// or inferred footprint, but a measured one has an interval per run of
// bytes touched, so one launch can meet another on many intervals of one
// allocation. The history finds a conflict per pair of accesses; reporting
// each as a diagnostic would fold them into one entry whose count no longer
// says how often the race happened. So conflicts wait until the whole record
// is applied, and the conflicts of one pair of operations (the same two
// accesses' epochs and operations, allocation, hazard and footprint origins)
// become one diagnostic: each side's modes united and its accesses' hull,
// and the exact conflicting ranges, sorted and merged (the first
// max_listed_ranges listed, all of them counted). Every diagnostic of the
// record then goes to the log in the order it was found, and only there is
// deduplicated and its certainty fixed (Note [Candidates and confirmed
// diagnostics]); the cause and the timeline of a new report are computed
// then, with the window's operation of the moment the conflict was found.
#include <algorithm>

#include "sanitizer/engine/engine_impl.h"

namespace streamsan {
namespace {

bool same_operation(const operation_ref& a, const operation_ref& b) noexcept {
  return a.seq == b.seq && a.op == b.op && a.name == b.name && a.graph == b.graph &&
         a.graph_node == b.graph_node && a.alloc == b.alloc && a.origin == b.origin;
}

std::uint64_t end_of(const operation_ref& op) noexcept {
  std::uint64_t end;
  return __builtin_add_overflow(op.offset, op.size, &end) ? ~std::uint64_t{0} : end;
}

// Adds `extra`'s mode and extent to the side `into` of the same operation.
void unite(operation_ref& into, const operation_ref& extra) noexcept {
  into.mode = into.mode | extra.mode;
  const std::uint64_t begin = std::min(into.offset, extra.offset);
  const std::uint64_t end = std::max(end_of(into), end_of(extra));
  into.offset = begin;
  into.size = end - begin;
}

// Fills d's conflicting bytes, relative to its allocation (which starts at
// `root_offset` in the root), from `pieces` in root coordinates: sorted and
// merged, the first max_listed_ranges listed when there are several.
void set_ranges(diagnostic& d, std::vector<std::pair<std::uint64_t, std::uint64_t>>& pieces,
                std::uint64_t root_offset) {
  std::sort(pieces.begin(), pieces.end());
  std::vector<byte_interval> merged;
  std::uint64_t count = 0, bytes = 0, hull_begin = 0, hull_end = 0;
  for (std::size_t i = 0; i < pieces.size();) {
    auto [begin, end] = pieces[i];
    for (++i; i < pieces.size() && pieces[i].first <= end; ++i) end = std::max(end, pieces[i].second);
    const std::uint64_t relative = begin >= root_offset ? begin - root_offset : 0;
    const std::uint64_t relative_end = end >= root_offset ? end - root_offset : 0;
    if (relative_end <= relative) continue;
    if (count == 0) hull_begin = relative;
    hull_end = relative_end;
    ++count;
    bytes += relative_end - relative;
    if (merged.size() < max_listed_ranges) merged.push_back({relative, relative_end - relative});
  }
  d.overlap_offset = hull_begin;
  d.overlap_size = hull_end - hull_begin;
  if (count > 1) d.ranges = std::move(merged);  // one range is the hull
  d.range_count = count;
  d.conflict_bytes = bytes;
}

bool runs_on_stream(operation_kind op) noexcept {
  switch (op) {
    case operation_kind::kernel:
    case operation_kind::memcpy:
    case operation_kind::staged_upload:
    case operation_kind::memset:
    case operation_kind::host_func:
    case operation_kind::graph_node:
    case operation_kind::event_record:
    case operation_kind::event_wait:
    case operation_kind::stream_wait_stream:
    case operation_kind::graph_launch:
      return true;
    case operation_kind::host_access:
    case operation_kind::alloc:
    case operation_kind::free:
    case operation_kind::event_synchronize:
    case operation_kind::event_query:
    case operation_kind::stream_synchronize:
    case operation_kind::stream_query:
    case operation_kind::device_synchronize:
    case operation_kind::stream_destroy:
    case operation_kind::event_destroy:
      return false;
  }
  return false;
}

}  // namespace

void set_conflict_ranges(pending_diagnostic& p) {
  diagnostic& d = p.d;
  if (p.pieces == 0) return;
  if (p.pieces > 1 || p.first_piece.first < p.root_offset) {
    p.more_pieces.push_back(p.first_piece);
    set_ranges(d, p.more_pieces, p.root_offset);
    return;
  }
  const auto [begin, end] = p.first_piece;  // the common case: no allocation
  d.overlap_offset = begin - p.root_offset;
  d.overlap_size = end > begin ? end - begin : 0;
  d.range_count = d.overlap_size > 0 ? 1 : 0;
  d.conflict_bytes = d.overlap_size;
}

operation_ref engine_impl::ref_of(const access_entry& e) const noexcept {
  operation_ref o;
  o.seq = e.seq;
  o.op = e.op;
  o.context = context_kind::host_thread;
  // The slot's journal names the context even after the slot changed owner
  // (Note [Retiring context slots]).
  if (const slot_owner* owner = contexts_.owner_of(e.when)) {
    o.context = owner->kind;
    if (owner->kind == context_kind::stream) o.stream = stream_id{owner->id};
  } else if (e.op == operation_kind::graph_node) {
    o.context = context_kind::stream;  // a node not launched yet runs on the device
  }
  o.thread = e.thread;
  o.name = e.name;
  o.mode = e.mode;
  o.origin = e.origin;
  o.offset = e.offset;
  o.size = e.size;
  o.stack = e.stack;
  o.nvtx_range = e.nvtx;
  o.graph = e.graph;
  o.graph_node = e.graph_node;
  o.alloc = e.alloc;
  return o;
}

// Note [Kernels that synchronize on the device]
// Streams, events and host calls are the orderings CUDA documents between
// operations, and they are all this engine sees. Kernels can also order
// their accesses among themselves, through memory: one spins on a flag that
// another sets with a release store or a system-scope atomic
// (conjugateGradientMultiDeviceCG's grid barrier across devices, NCCL's
// kernels). That is only sound when both kernels are guaranteed to be
// resident at once, or the spinning one may wait forever for one that never
// starts. CUDA guarantees it in one case: a cooperative launch keeps all its
// blocks resident, and cooperative launches on *different devices* run on
// different hardware, so neither waits for the other to be scheduled (what
// cudaLaunchCooperativeKernelMultiDevice, now removed, promised and its
// replacements build by hand). Two unordered kernels of one device may not
// run together, so a device-side handshake between them is a bug of its own,
// and stays reported.
// So a conflict between two cooperative launches on different devices is
// not reported: their accesses may well be ordered by a barrier of the
// program's own, which no API call shows, and a report would be a guess.
// They are counted (engine_statistics::device_synchronized_conflicts) and
// the summary says how many pairs went unchecked.
bool engine_impl::synchronize_on_device(const access_entry& current,
                                        const operation_ref& current_ref,
                                        const access_entry& previous,
                                        const operation_ref& previous_ref) const {
  if (!current.cooperative || !previous.cooperative) return false;
  if (current_ref.context != context_kind::stream || previous_ref.context != context_kind::stream) {
    return false;
  }
  const stream_state* a = contexts_.find_stream(current_ref.stream);
  const stream_state* b = contexts_.find_stream(previous_ref.stream);
  return a != nullptr && b != nullptr && a->device_index != b->device_index;
}

// Note [Host threads order what the log does not show]
// Host threads order one another through joins, locks, condition variables,
// atomics and OpenMP barriers, none of which the log shows (Note [Race
// kinds] leaves host/host pairs to ThreadSanitizer for that reason). That
// also hides orderings between CUDA work: thread A synchronizes a stream
// and unlocks a mutex; thread B locks it and launches a kernel touching the
// same bytes on another stream. The log shows the kernel unordered with the
// stream's work, yet the program is correct. What the log does show is
// when a host thread *learned* that work was complete (a synchronize, a
// complete query, a synchronous copy: the thread's clock covers it), and
// the log's order is the order in which those calls returned. So if any
// host thread had seen the earlier access complete before the later access
// was issued, a host-side handshake may order the two, and a report would
// be a guess. Such conflicts are counted (host_ordered_conflicts), named in
// the summary, and not reported. If no host thread had seen it complete, no
// host synchronization can order the pair: only streams, events and host
// calls can, and those are in the log, so the conflict stays reported.
// With one host thread nothing changes: whatever it has seen, every later
// operation it issues is ordered after already. What is missed: a real
// race between two threads' work where some third thread happened to have
// synchronized the earlier work first (timing, not program order, kept
// it apart in that run).
// The rule looks at every host thread's clock, including threads that have
// ended (joined into exited_threads_saw_ at thread_exit); a reused slot's
// new owner starts above every value the slot had (Note [Retiring context
// slots], rule 2), so old knowledge never covers the new owner's work.
bool engine_impl::host_may_order(const access_entry& previous, bool& known) {
  if (!known) {
    host_saw_ = exited_threads_saw_;
    contexts_.for_each_thread(
        [&](thread_id, const thread_state& t) { host_saw_.join(t.context->clock); });
    known = true;
  }
  return host_saw_.covers(previous.when);
}

void engine_impl::report_conflicts(const allocation& a, const access_entry& current,
                                   diagnostic_kind lifetime_kind) {
  const operation_ref current_ref = ref_of(current);
  bool host_saw_known = false;
  for (const history_conflict& c : conflicts_) {
    const operation_ref previous = ref_of(c.previous);
    if (current_ref.context == context_kind::host_thread &&
        previous.context == context_kind::host_thread) {
      ++stats_.host_host_conflicts;  // Note [Race kinds]
      continue;
    }
    if (synchronize_on_device(current, current_ref, c.previous, previous)) {
      ++stats_.device_synchronized_conflicts;
      continue;
    }
    if (host_may_order(c.previous, host_saw_known)) {
      ++stats_.host_ordered_conflicts;
      continue;
    }
    diagnostic_kind kind = diagnostic_kind::host_device_race;
    if (lifetime_kind == diagnostic_kind::free_while_in_use) {
      kind = lifetime_kind;
    } else if (current_ref.context == context_kind::stream &&
               previous.context == context_kind::stream) {
      kind = diagnostic_kind::stream_race;
    }
    // Note [One diagnostic per pair of operations]
    const auto same_pair = [&](const pending_diagnostic& p) {
      return p.merges && p.d.kind == kind && p.d.hazard_kind == c.kind &&
             p.current.when == current.when && p.previous.when == c.previous.when &&
             p.d.allocation->id == a.ref.id && same_operation(p.d.current, current_ref) &&
             same_operation(*p.d.previous, previous);
    };
    const auto found = std::find_if(pending_.begin(), pending_.end(), same_pair);
    if (found != pending_.end()) {
      unite(found->d.current, current_ref);
      unite(*found->d.previous, previous);
      found->add_piece(c.begin, c.end);
      continue;
    }
    pending_diagnostic& p = pending_.emplace_back();
    p.d.kind = kind;
    p.d.hazard_kind = c.kind;
    p.d.current = current_ref;
    p.d.previous = previous;
    p.d.allocation = a.ref;
    p.current = current;
    p.previous = c.previous;
    p.window_op = current_op_;
    p.merges = true;
    p.root_offset = a.root_offset;
    p.add_piece(c.begin, c.end);
  }
}

void engine_impl::report_pending() {
  const std::uint64_t window_op = current_op_;
  for (pending_diagnostic& p : pending_) {
    set_conflict_ranges(p);
    current_op_ = p.window_op;
    auto enrich = [&](diagnostic& fresh) { enrich_race(fresh, p.current, p.previous); };
    add_to_log(p.d, enrich);
  }
  current_op_ = window_op;
  pending_.clear();
}

void engine_impl::report_use_after_free(const allocation& a, const access_entry& current) {
  const allocation& dead = a.freed ? a : *a.root;
  if (dead.unborn) {
    // Note [Graph allocations]: no launch has allocated it yet.
    report_use_before_alloc(a, current);
    return;
  }
  diagnostic d;
  d.kind = diagnostic_kind::use_after_free;
  d.current = ref_of(current);
  d.previous = ref_of(dead.free_op);
  d.previous->context = dead.free_context;
  d.previous->stream = dead.free_stream;
  d.allocation = a.ref;
  d.overlap_offset = current.offset;
  d.overlap_size = current.size;
  defer(d, current, dead.free_op);
}

void engine_impl::report_use_before_alloc(const allocation& a, const access_entry& current) {
  diagnostic d;
  d.kind = diagnostic_kind::use_before_alloc;
  d.current = ref_of(current);
  d.previous = ref_of(a.root->created);
  d.allocation = a.ref;
  d.overlap_offset = current.offset;
  d.overlap_size = current.size;
  defer(d, current, a.root->created);
}

std::uint32_t engine_impl::report_sync_error(const record_header& h, diagnostic_kind kind,
                                             operation_kind op, stream_id stream,
                                             event_id event) {
  const thread_state& t = thread_of(h);
  diagnostic d;
  d.kind = kind;
  d.current.seq = h.seq;
  d.current.op = op;
  // Stream operations (a wait, a record, a launch) run on the stream they
  // name; synchronizations and destroys are the host's.
  d.current.context = runs_on_stream(op) && !is_none(stream) ? context_kind::stream
                                                              : context_kind::host_thread;
  d.current.stream = stream;
  d.current.thread = h.thread;
  d.current.stack = h.stack;
  d.current.nvtx_range = t.nvtx.empty() ? string_id{} : t.nvtx.back();
  d.event = event;
  d.stream = stream;
  return emit(d);
}

ordering_call engine_impl::ordering_call_of(const record_header& h, const thread_state& t,
                                            operation_kind op) const noexcept {
  ordering_call c;
  c.seq = h.seq;
  c.op = op;
  c.thread = h.thread;
  c.stack = h.stack;
  c.nvtx = t.nvtx.empty() ? string_id{} : t.nvtx.back();
  return c;
}

void engine_impl::enrich_race(diagnostic& d, const access_entry& current,
                              const access_entry& previous) {
  if (d.previous) {
    const race_sides sides{d.current, *d.previous, previous.when.slot()};
    d.cause = find_cause(near_.find(current.when.slot()), sides);
    // Note [Causes]: the warning about the call itself links to the race.
    if (d.cause && d.cause->reported_as != 0) {
      if (diagnostic* call = diagnostics_.find(d.cause->reported_as)) {
        call->failed_to_prevent.push_back(d.id);
      }
    }
  }
  if (window_ && current_op_ != 0 && timelines_kept_ < options_.timeline_races) {
    timeline_op fallback{};
    if (d.previous) {
      const operation_ref& p = *d.previous;
      fallback = timeline_op_of({p.seq, p.thread, p.stack}, p.op, p.context, p.stream, p.name);
    }
    d.timeline = window_->cut(current_op_, previous.seq, previous.when.slot(), fallback);
    if (d.timeline) ++timelines_kept_;
  }
}

}  // namespace streamsan
