// The operation window behind race timelines (Note [Race timelines] in
// diagnostic.h, Note [The window is bounded] in operation_window.h). Every
// function here runs only when the engine keeps a window.
#include "sanitizer/engine/engine_impl.h"

namespace streamsan {

timeline_op engine_impl::timeline_op_of(const record_header& h, operation_kind op,
                                        context_kind context, stream_id stream,
                                        string_id name) const noexcept {
  timeline_op o;
  o.seq = h.seq;
  o.op = op;
  o.context = context;
  o.stream = stream;
  o.thread = h.thread;
  o.name = name;
  o.stack = h.stack;
  return o;
}

std::uint64_t engine_impl::window_stream_op(const record_header& h, const thread_state& t,
                                            const stream_state& s, operation_kind op,
                                            string_id name, event_id event, stream_id target) {
  timeline_op o = timeline_op_of(h, op, context_kind::stream, stream_id{s.context->id}, name);
  o.event = event;
  o.target = target;
  const std::uint64_t id = window_->add(s.context->slot, o);
  // Note [Enqueue]: after the thread's earlier actions, and the default
  // streams' implicit synchronization.
  window_->join(t.context->slot, id, timeline_edge_kind::issue);
  if (s.implicit_sources != nullptr) {
    for (const execution_context* source : *s.implicit_sources) {
      window_->join(source->slot, id, timeline_edge_kind::default_stream);
    }
  }
  current_op_ = id;
  return id;
}

std::uint64_t engine_impl::window_host_op(const record_header& h, const thread_state& t,
                                          operation_kind op, string_id name, event_id event,
                                          stream_id target, bool not_ready) {
  timeline_op o = timeline_op_of(h, op, context_kind::host_thread, stream_id{}, name);
  o.event = event;
  o.target = target;
  o.not_ready = not_ready;
  const std::uint64_t id = window_->add(t.context->slot, o);
  current_op_ = id;
  return id;
}

void engine_impl::window_host_joins_stream(const thread_state&, std::uint64_t host_op,
                                           const stream_state& s, timeline_edge_kind kind) {
  window_->join(s.context->slot, host_op, kind);
}

void engine_impl::copy_returns(const record_header& h, const thread_state& t,
                               const stream_state& s, operation_kind op) {
  const std::uint64_t stream_op = window_->last_in(s.context->slot);
  const std::uint64_t id = window_host_op(h, t, op, {}, {}, stream_id{s.context->id});
  window_->edge(stream_op, id, timeline_edge_kind::copy_return);
}

}  // namespace streamsan
