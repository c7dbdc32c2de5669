// Happens-before edges: streams, events and host synchronization.
//
// Note [Enqueue]
// S-ASYNC-1, S-STREAM-1: an operation T issues to stream S runs after
// everything earlier on S and after everything T did before issuing it. So
// at enqueue S joins T's clock, then the default-stream rules apply (Note
// [Legacy default stream]), then S ticks: the operation's epoch is
// (S, ++S[S]). Event records and waits are stream operations and join the
// same way, but do not tick, as they access no memory.
//
// Note [Host actions tick]
// A host thread's own component ticks before each of its own actions (a
// host access, a synchronization, a free, the host side of a copy), never on
// an enqueue. A stream that joined T at a launch covers T's actions up to
// that launch and not the ones after it, and back-to-back launches from T
// see an unchanged clock, so their joins are skipped (Note [Skipping
// redundant joins]).
//
// Note [Implicit streams]
// Producers announce streams with stream_create (the default streams with
// their flavors legacy_default / per_thread_default). An operation naming a
// stream never announced gets one created on the spot, on device 0, from the
// issuing thread's clock: stream id none as the legacy default stream (CUDA's
// stream 0), any other id as a blocking stream. Counted in
// engine_statistics::implicit_streams.
//
// Note [Streams start from their creator's clock]
// A new stream's clock is a copy of the creating thread's. The stream has no
// work yet, so this only matters for work another thread later issues to it:
// that work is ordered after everything the creator was ordered after,
// including a device synchronize just before the creation. Without it, a
// stream created after cudaDeviceSynchronize and used from a worker thread
// would look unordered with the work the synchronize waited for.
//
// Note [Event snapshots]
// S-EVENT-1: recording event E on stream S sets E's snapshot to S's clock
// as of the record (after S joined its issuing thread and the default-stream
// rules), and a re-record replaces it, on whichever stream. S-EVENT-2: a
// stream waiting on E joins the snapshot, so it is ordered after exactly the
// work enqueued on S before the record; later work on S has higher epochs.
// S-EVENT-4 / S-SYNC-2: event synchronize, and an event query that returned
// true, make the host thread join the snapshot; a query that returned false
// orders nothing. The snapshot keeps the stream's version, so a wait on an
// event whose stream the waiter already joined is skipped (Note [Skipping
// redundant joins]).
//
// Note [Event misuse]
// These calls succeed (or fail) without ordering anything, which is the bug:
//   never recorded (S-EVENT-3)      wait / synchronize report
//                                   unrecorded_event. A destroyed and
//                                   re-created event has a new id, so it is
//                                   never recorded either.
//   destroyed (S-STREAM-9 analogue) any use reports destroyed_event_use.
//   wrong device (S-EVENT-6)        the event's device is fixed by its first
//                                   record; a record on another device's
//                                   stream reports event_device_mismatch and
//                                   leaves the snapshot as it was. Waits may
//                                   come from any device.
// In every case the ordering the call was meant to create is absent, so the
// data race it was meant to prevent is reported too.
//
// Note [Queries of unrecorded events]
// A query of a never-recorded event is not misuse on its own: it answers
// true (S-EVENT-4) and orders nothing (S-EVENT-3), and correct libraries do
// it (cuBLAS queries events it has not recorded yet, issue #10). A wait or a synchronize on such an event is still
// reported: the caller expects it to order something. So the query reports
// nothing and orders nothing; if the program then relies on it, the access
// it meant to protect is reported as a race, with the real cause.
//
// Note [Host synchronization]
// Stream synchronize (S-STREAM-5) and a stream query that returned true
// (S-STREAM-4, S-SYNC-2) make the host thread join the stream's clock:
// everything enqueued on it so far. Device synchronize (S-SYNC-1) joins every
// stream of the device, destroyed ones included (their work still runs,
// S-STREAM-9; they are joined through their floor). Synchronizing with a
// destroyed stream reports destroyed_stream_use and orders nothing (Note
// [Work on a destroyed stream]).
#include <algorithm>

#include "sanitizer/engine/engine_impl.h"

namespace streamsan {

stream_state& engine_impl::unusual_stream_for(const record_header& h, thread_state& t,
                                              stream_id id, operation_kind op) {
  if (stream_state* s = contexts_.find_stream(id)) {
    // S-STREAM-9: using a destroyed stream is an error. Its earlier work
    // still counts; callers skip the synchronization the call would have done.
    if (s->destroyed) report_sync_error(h, diagnostic_kind::destroyed_stream_use, op, id, {});
    return *s;
  }
  ++stats_.implicit_streams;
  return contexts_.create_stream(
      id, 0, is_none(id) ? stream_flavor::legacy_default : stream_flavor::blocking,
      *t.context);
}

// Note [Known events found first]
// Every record and wait of an event went through id_table::get_or_insert,
// which tests the table of far ids and the page directory for growth
// before it reaches the slot: 37 instructions where a lookup takes about
// ten, twice per record-and-wait pair. The event nearly always exists
// (event_create, or an earlier use), so it is looked up first and made
// only when absent; get_or_insert never puts an id both in the pages and
// among the far ids, so both find the same object. engine_replay under
// callgrind (release, 2026-12-03): 500.8 -> 497.7 instructions per launch.
event_state& engine_impl::event_for(event_id id) {
  if (event_state* e = events_.find(id)) [[likely]] return *e;
  return events_.get_or_insert(id);
}

// ---- streams ----

void engine_impl::on(const record_header& h, const stream_create& r) {
  thread_state& t = thread_of(h);
  if (contexts_.find_stream(r.stream) != nullptr) {
    ++stats_.ignored_records;  // ids never repeat: a duplicate announcement
    return;
  }
  // Note [Streams start from their creator's clock]
  contexts_.create_stream(r.stream, r.device, r.flavor, *t.context);
  // Note [Thread exit]: a per-thread default stream ends with its thread.
  if (r.flavor == stream_flavor::per_thread_default) t.own_streams.push_back(r.stream);
}

void engine_impl::host_waits_for_stream(const record_header& h, stream_id stream,
                                        operation_kind op, bool complete) {
  thread_state& t = thread_of(h);
  host_action(t);
  stream_state& s = stream_for(h, t, stream, op);
  if (s.destroyed) return;
  if (s.capturing) {
    report_sync_error(h, diagnostic_kind::sync_during_capture, op, stream, {});
    return;
  }
  if (complete) host_joins_stream(t, s);
  // Note [Causes]: which stream the host waited for, or did not.
  ordering_call call = ordering_call_of(h, t, op);
  call.has_source = true;
  call.source = s.context->slot;
  call.source_stream = stream;
  call.not_ready = !complete;
  near_miss_slot& calls = near_.at(t.context->slot);
  (complete ? calls.last_sync : calls.last_not_ready) = call;
  if (window_) [[unlikely]] {
    const auto id = window_host_op(h, t, op, {}, {}, stream, !complete);
    if (complete) window_host_joins_stream(t, id, s, timeline_edge_kind::stream_sync);
  }
}

// S-STREAM-5: the host waits for all work submitted to the stream.
void engine_impl::on(const record_header& h, const stream_synchronize& r) {
  host_waits_for_stream(h, r.stream, operation_kind::stream_synchronize, true);
}

// S-STREAM-4, S-SYNC-2: only a query that returned true orders anything.
void engine_impl::on(const record_header& h, const stream_query& r) {
  host_waits_for_stream(h, r.stream, operation_kind::stream_query, r.complete);
}

void engine_impl::on(const record_header& h, const stream_wait_stream& r) {
  thread_state& t = thread_of(h);
  stream_state& waiter = stream_for(h, t, r.waiter, operation_kind::stream_wait_stream);
  stream_state& waited = stream_for(h, t, r.waited, operation_kind::stream_wait_stream);
  if (waiter.destroyed || waited.destroyed) return;
  if (waiter.capturing) return;  // captured into the graph, not executed
  if (waited.capturing) {
    // Waiting on capturing work pulls the waiter into the capture (the
    // fork of a multi-stream capture), as an event wait does.
    begin_capture(waiter, waited.capture_graph);
    return;
  }
  // S-STREAM-6: the waiter joins the waited stream's clock as of now; work
  // enqueued on `waited` later has higher epochs and is not covered. The
  // waited side is an event record under the hood: a stream operation.
  prepare(t, waited);
  prepare(t, waiter);
  contexts_.join(*waiter.context, *waited.context);
  ordering_call call = ordering_call_of(h, t, operation_kind::stream_wait_stream);
  call.stream = r.waiter;
  call.has_source = true;
  call.source = waited.context->slot;
  call.source_stream = r.waited;
  near_.at(waiter.context->slot).last_wait = call;
  if (window_) [[unlikely]] {
    const auto id =
        window_stream_op(h, t, waiter, operation_kind::stream_wait_stream, {}, {}, r.waited);
    window_->join(waited.context->slot, id, timeline_edge_kind::wait_stream);
  }
}

void engine_impl::on(const record_header& h, const device_synchronize& r) {
  thread_state& t = thread_of(h);
  host_action(t);
  device_state* device = contexts_.find_device(r.device);
  if (device == nullptr) return;  // no stream ever created there: nothing to order
  if (device->capturing > 0) {
    const auto it = std::find_if(capturing_.begin(), capturing_.end(), [&](const stream_state* s) {
      return s->device == device;
    });
    const stream_id stream = it != capturing_.end() ? (*it)->id : stream_id{};
    report_sync_error(h, diagnostic_kind::sync_during_capture,
                      operation_kind::device_synchronize, stream, {});
    return;
  }
  // S-SYNC-1: all work of all streams of the device, destroyed ones
  // included (through the floors: Note [Retiring context slots]).
  for (const execution_context* c : device->streams) contexts_.join(*t.context, *c);
  if (window_) [[unlikely]] {
    const auto id = window_host_op(h, t, operation_kind::device_synchronize, {});
    for (const execution_context* c : device->streams) {
      window_->join(c->slot, id, timeline_edge_kind::device_sync);
    }
  }
}

// ---- events ----

void engine_impl::on(const record_header&, const event_create& r) {
  if (events_.find(r.event) != nullptr) {
    ++stats_.ignored_records;
    return;
  }
  event_for(r.event).flags = r.flags;
}

void engine_impl::on(const record_header& h, const event_destroy& r) {
  event_state& e = event_for(r.event);
  if (e.destroyed) {
    report_sync_error(h, diagnostic_kind::destroyed_event_use, operation_kind::event_destroy,
                      {}, r.event);
    return;
  }
  e.destroyed = true;
  e.snapshot.release_memory();
  if (observer_ != nullptr) observer_->event_destroyed(r.event);
  // Remembered for a while so a later use is reported, then forgotten.
  dead_events_.push_back(r.event);
  while (dead_events_.size() > options_.remembered_dead_objects) {
    events_.erase(dead_events_.front());
    dead_events_.pop_front();
  }
}

void engine_impl::on(const record_header& h, const event_record& r) {
  thread_state& t = thread_of(h);
  stream_state& s = stream_for(h, t, r.stream, operation_kind::event_record);
  event_state* live = live_event(h, r.event, r.stream, operation_kind::event_record);
  if (live == nullptr) return;
  event_state& e = *live;
  if (s.destroyed) return;
  if (s.capturing) {
    // Captured: the record becomes a graph node. Host synchronization on
    // the event is illegal now (S-GRAPH-1), and a stream that waits on it
    // joins the capture.
    e.recorded_in_capture = true;
    e.capture_graph = s.capture_graph;
    return;
  }
  // S-EVENT-6: the event belongs to the device of its first record; a stream
  // of another device cannot record it (the call fails, ordering nothing).
  if (e.device_known && e.device != s.device_index) {
    report_sync_error(h, diagnostic_kind::event_device_mismatch, operation_kind::event_record,
                      r.stream, r.event);
    return;
  }
  prepare(t, s);
  // S-EVENT-1: the event captures the stream's work so far; a re-record
  // overwrites the previous snapshot.
  // Announced even when the snapshot below is kept (Note [Announcing every
  // join]).
  if (observer_ != nullptr) observer_->event_recorded(r.event, s.context->ref());
  if (!(e.recorded && e.source == s.context->slot && e.source_version == s.context->version)) {
    e.snapshot = s.context->clock;
    e.source = s.context->slot;
    e.source_version = s.context->version;
  }
  e.recorded = true;
  e.recorded_in_capture = false;
  e.device_known = true;
  e.device = s.device_index;
  e.last_record = record_site{h.seq, s.context->slot, r.stream, h.thread, h.stack};
  if (window_) [[unlikely]] {
    e.record_op = window_stream_op(h, t, s, operation_kind::event_record, {}, r.event);
  }
}

void engine_impl::on(const record_header& h, const event_wait& r) {
  thread_state& t = thread_of(h);
  stream_state& s = stream_for(h, t, r.stream, operation_kind::event_wait);
  event_state* live = live_event(h, r.event, r.stream, operation_kind::event_wait);
  if (live == nullptr) return;
  event_state& e = *live;
  if (s.destroyed || s.capturing) return;
  if (e.recorded_in_capture) {
    // Waiting on captured work forks the capture into this stream. Once the
    // capture has ended the event stands for no executed work at all.
    if (!begin_capture(s, e.capture_graph)) {
      report_sync_error(h, diagnostic_kind::unrecorded_event, operation_kind::event_wait,
                        r.stream, r.event);
    }
    return;
  }
  prepare(t, s);
  // Note [Causes]: what the wait ordered the stream after, if anything.
  ordering_call call = ordering_call_of(h, t, operation_kind::event_wait);
  call.stream = r.stream;
  call.event = r.event;
  remember_event(call, e);
  if (!e.recorded) {
    // S-EVENT-3: a no-op that orders nothing, and almost always a bug.
    call.reported_as = report_sync_error(h, diagnostic_kind::unrecorded_event,
                                         operation_kind::event_wait, r.stream, r.event);
  } else {
    // S-EVENT-2: later work on the stream waits for the captured work. Any
    // device may wait (S-EVENT-6).
    if (observer_ != nullptr) observer_->event_joined(s.context->ref(), r.event);
    contexts_.join_snapshot(*s.context, e.snapshot, e.source, e.source_version);
  }
  near_.at(s.context->slot).last_wait = call;
  if (window_) [[unlikely]] {
    const auto id = window_stream_op(h, t, s, operation_kind::event_wait, {}, r.event);
    if (e.recorded) window_->edge(e.record_op, id, timeline_edge_kind::event);
  }
}

event_state* engine_impl::live_event(const record_header& h, event_id id, stream_id stream,
                                     operation_kind op) {
  event_state& e = event_for(id);
  if (!e.destroyed) return &e;
  report_sync_error(h, diagnostic_kind::destroyed_event_use, op, stream, id);
  return nullptr;
}

bool engine_impl::event_orders_host(const record_header& h, event_id id, operation_kind op,
                                    bool unrecorded_is_misuse, ordering_call& call) {
  const event_state* live = live_event(h, id, {}, op);
  if (live == nullptr) return false;
  const event_state& e = *live;
  if (e.recorded_in_capture) {
    report_sync_error(h, diagnostic_kind::sync_during_capture, op, {}, id);
    return false;
  }
  call.event = id;
  remember_event(call, e);
  if (!e.recorded) {
    if (unrecorded_is_misuse) {
      call.reported_as = report_sync_error(h, diagnostic_kind::unrecorded_event, op, {}, id);
    }
    return false;
  }
  return true;
}

// S-EVENT-4: event synchronize makes the host wait for the captured work.
// S-SYNC-2: a query that returned true orders like a synchronize; false
// orders nothing. The misuse checks apply either way, except that a query
// of a never-recorded event is not one (Note [Queries of unrecorded
// events]); it is still remembered, so that a race it fails to prevent
// names it as the cause.
void engine_impl::host_waits_for_event(const record_header& h, event_id event,
                                       operation_kind op, bool complete) {
  thread_state& t = thread_of(h);
  host_action(t);
  ordering_call call = ordering_call_of(h, t, op);
  const bool misuse = op == operation_kind::event_synchronize;
  const bool orders = event_orders_host(h, event, op, misuse, call) && complete;
  const event_state* e = orders ? events_.find(event) : nullptr;
  if (e != nullptr) host_joins_event(t, event, *e);
  if (!is_none(call.event)) {
    // Note [Causes]
    call.not_ready = !complete && !call.unrecorded;
    near_miss_slot& calls = near_.at(t.context->slot);
    (call.not_ready ? calls.last_not_ready : calls.last_sync) = call;
  }
  if (window_) [[unlikely]] {
    const auto id = window_host_op(h, t, op, {}, event, {}, !complete);
    if (e != nullptr) window_->edge(e->record_op, id, timeline_edge_kind::event);
  }
}

void engine_impl::on(const record_header& h, const event_synchronize& r) {
  host_waits_for_event(h, r.event, operation_kind::event_synchronize, true);
}

void engine_impl::on(const record_header& h, const event_query& r) {
  host_waits_for_event(h, r.event, operation_kind::event_query, r.complete);
}

}  // namespace streamsan
