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
    emit(d);
  }
}

void engine_impl::report_use_after_free(const allocation& a, const access_entry& current) {
  const allocation& dead = a.ref.freed ? a : *a.root;
  diagnostic d;
  d.kind = diagnostic_kind::use_after_free;
  d.current = ref_of(current);
  d.previous = ref_of(dead.free_op);
  d.previous->context = dead.free_context;
  d.previous->stream = dead.free_stream;
  d.allocation = a.ref;
  d.overlap_offset = current.offset;
  d.overlap_size = current.size;
  emit(d);
}

void engine_impl::report_use_before_alloc(const allocation& a, const access_entry& current) {
  diagnostic d;
  d.kind = diagnostic_kind::use_before_alloc;
  d.current = ref_of(current);
  d.previous = ref_of(a.root->created);
  d.allocation = a.ref;
  d.overlap_offset = current.offset;
  d.overlap_size = current.size;
  emit(d);
}

void engine_impl::report_sync_error(const record_header& h, diagnostic_kind kind,
                                    operation_kind op, stream_id stream, event_id event) {
  const thread_state& t = thread_of(h);
  diagnostic d;
  d.kind = kind;
  d.current.seq = h.seq;
  d.current.op = op;
  d.current.context = context_kind::host_thread;
  d.current.stream = stream;
  d.current.thread = h.thread;
  d.current.stack = h.stack;
  d.current.nvtx_range = t.nvtx.empty() ? string_id{} : t.nvtx.back();
  d.event = event;
  d.stream = stream;
  emit(d);
}

}  // namespace streamsan
