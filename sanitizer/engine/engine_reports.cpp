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
#include "sanitizer/engine/engine_impl.h"

namespace streamsan {
namespace {

bool runs_on_stream(operation_kind op) noexcept {
  switch (op) {
    case operation_kind::kernel:
    case operation_kind::memcpy:
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

operation_ref engine_impl::ref_of(const access_entry& e) const noexcept {
  operation_ref o;
  o.seq = e.seq;
  o.op = e.op;
  o.context = context_kind::host_thread;
  if (e.when.slot() < contexts_.context_count()) {
    const execution_context& c = contexts_.context(e.when.slot());
    o.context = c.kind;
    if (c.kind == context_kind::stream) o.stream = stream_id{c.id};
  }
  o.thread = e.thread;
  o.name = e.name;
  o.mode = e.mode;
  o.offset = e.offset;
  o.size = e.size;
  o.stack = e.stack;
  o.nvtx_range = e.nvtx;
  o.graph = e.graph;
  o.graph_node = e.graph_node;
  o.alloc = e.alloc;
  return o;
}

void engine_impl::report_conflicts(const allocation& a, const access_entry& current,
                                   diagnostic_kind lifetime_kind) {
  const context_kind current_kind = ref_of(current).context;
  for (const history_conflict& c : conflicts_) {
    const operation_ref previous = ref_of(c.previous);
    if (current_kind == context_kind::host_thread &&
        previous.context == context_kind::host_thread) {
      ++stats_.host_host_conflicts;  // Note [Race kinds]
      continue;
    }
    diagnostic d;
    if (lifetime_kind == diagnostic_kind::free_while_in_use) {
      d.kind = lifetime_kind;
    } else if (current_kind == context_kind::stream && previous.context == context_kind::stream) {
      d.kind = diagnostic_kind::stream_race;
    } else {
      d.kind = diagnostic_kind::host_device_race;
    }
    d.hazard_kind = c.kind;
    d.current = ref_of(current);
    d.previous = previous;
    d.allocation = a.ref;
    d.overlap_offset = c.begin >= a.root_offset ? c.begin - a.root_offset : 0;
    d.overlap_size = c.end - c.begin;
    emit(d, [&](diagnostic& fresh) { enrich_race(fresh, current, c.previous); });
  }
}

void engine_impl::report_use_after_free(const allocation& a, const access_entry& current) {
  const allocation& dead = a.ref.freed ? a : *a.root;
  diagnostic d;
  d.kind = diagnostic_kind::use_after_free;
  d.current = ref_of(current);
  d.previous = ref_of(dead.free_op);
  d.allocation = a.ref;
  d.overlap_offset = current.offset;
  d.overlap_size = current.size;
  emit(d, [&](diagnostic& fresh) { enrich_race(fresh, current, dead.free_op); });
}

void engine_impl::report_use_before_alloc(const allocation& a, const access_entry& current) {
  diagnostic d;
  d.kind = diagnostic_kind::use_before_alloc;
  d.current = ref_of(current);
  d.previous = ref_of(a.root->created);
  d.allocation = a.ref;
  d.overlap_offset = current.offset;
  d.overlap_size = current.size;
  emit(d, [&](diagnostic& fresh) { enrich_race(fresh, current, a.root->created); });
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
