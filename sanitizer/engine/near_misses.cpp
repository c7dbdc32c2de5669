#include "sanitizer/engine/near_misses.h"

namespace streamsan {
namespace {

bool on_stream(const operation_ref& op) noexcept { return op.context == context_kind::stream; }

operation_ref call_ref(const ordering_call& c, context_kind context) {
  operation_ref o;
  o.seq = c.seq;
  o.op = c.op;
  o.context = context;
  o.stream = context == context_kind::stream ? c.stream : c.source_stream;
  o.thread = c.thread;
  o.stack = c.stack;
  o.nvtx_range = c.nvtx;
  return o;
}

ordering_cause cause_of(cause_kind kind, const ordering_call& c, context_kind context) {
  ordering_cause cause;
  cause.kind = kind;
  cause.call = call_ref(c, context);
  cause.event = c.event;
  cause.named = c.source_stream;
  cause.reported_as = c.reported_as;
  if (c.record.seq != 0) {
    operation_ref r;
    r.seq = c.record.seq;
    r.op = operation_kind::event_record;
    r.context = context_kind::stream;
    r.stream = c.record.stream;
    r.thread = c.record.thread;
    r.stack = c.record.stack;
    cause.record = r;
  }
  return cause;
}

// The call's source is the producer's stream. The slot alone does not say
// so: it may have changed owner since the call (Note [Retiring context
// slots] in context_table.h), so the stream id must match too.
bool source_is_producer(const ordering_call& c, const race_sides& race) noexcept {
  return c.has_source && c.source == race.previous_slot && on_stream(race.previous) &&
         c.source_stream == race.previous.stream;
}

// An event the call waited for, recorded on the producer's stream before
// the producer was enqueued: it covers the work before the record only.
bool recorded_before(const ordering_call& c, const race_sides& race) noexcept {
  return source_is_producer(c, race) && c.record.seq != 0 && c.record.seq < race.previous.seq;
}

// The call ordered the consumer after a stream that is not the producer's.
bool ordered_other(const ordering_call& c, const race_sides& race) noexcept {
  return c.has_source && !source_is_producer(c, race) && on_stream(race.previous) &&
         c.seq > race.previous.seq;
}

std::optional<ordering_cause> stream_cause(const near_miss_slot& calls, const race_sides& race) {
  const ordering_call& w = calls.last_wait;
  if (w.seq == 0 || w.seq > race.current.seq) return std::nullopt;
  const auto context = context_kind::stream;
  if (w.unrecorded) return cause_of(cause_kind::unrecorded_event, w, context);
  if (recorded_before(w, race)) return cause_of(cause_kind::event_recorded_before_producer, w, context);
  if (ordered_other(w, race)) return cause_of(cause_kind::waited_other_stream, w, context);
  return std::nullopt;
}

std::optional<ordering_cause> host_call_cause(const ordering_call& c, const race_sides& race) {
  if (c.seq == 0 || c.seq > race.current.seq) return std::nullopt;
  const auto context = context_kind::host_thread;
  if (c.not_ready) {
    if (source_is_producer(c, race) && c.seq > race.previous.seq) {
      return cause_of(cause_kind::query_not_ready, c, context);
    }
    return std::nullopt;
  }
  if (c.unrecorded) return cause_of(cause_kind::unrecorded_event, c, context);
  if (recorded_before(c, race)) return cause_of(cause_kind::event_recorded_before_producer, c, context);
  if (ordered_other(c, race)) return cause_of(cause_kind::synchronized_other_stream, c, context);
  return std::nullopt;
}

std::optional<ordering_cause> host_cause(const near_miss_slot& calls, const race_sides& race) {
  // The later of the two calls is the one the program relied on.
  const bool sync_first = calls.last_sync.seq >= calls.last_not_ready.seq;
  const ordering_call& first = sync_first ? calls.last_sync : calls.last_not_ready;
  const ordering_call& second = sync_first ? calls.last_not_ready : calls.last_sync;
  if (auto cause = host_call_cause(first, race)) return cause;
  return host_call_cause(second, race);
}

// S-HOSTFN-1: a host function is ordered by its own stream only.
std::optional<ordering_cause> host_function_cause(const race_sides& race) {
  const auto& [current, previous, slot] = race;
  if (!on_stream(current) || !on_stream(previous) || current.stream == previous.stream) {
    return std::nullopt;
  }
  const operation_ref* host_fn = current.op == operation_kind::host_func    ? &current
                                 : previous.op == operation_kind::host_func ? &previous
                                                                            : nullptr;
  if (host_fn == nullptr) return std::nullopt;
  ordering_cause cause;
  cause.kind = cause_kind::host_function_on_other_stream;
  cause.call = *host_fn;
  cause.named = host_fn->stream;
  return cause;
}

}  // namespace

std::optional<ordering_cause> find_cause(const near_miss_slot* calls, const race_sides& race) {
  if (calls != nullptr) {
    auto cause = on_stream(race.current) ? stream_cause(*calls, race) : host_cause(*calls, race);
    if (cause) return cause;
  }
  return host_function_cause(race);
}

}  // namespace streamsan
