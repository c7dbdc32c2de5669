// Contexts that end: stream destroy, thread exit, and the reuse of their
// slots (Note [Retiring context slots], context_table.h).
//
// Note [Work on a destroyed stream]
// S-STREAM-9: using a destroyed stream is an error; the call fails and runs
// nothing. Every operation naming a destroyed stream reports
// destroyed_stream_use and has no other effect, so a stream's clock is final
// at its destroy. The work it had before still completes and still counts:
// device synchronize, a synchronizing free and the legacy stream join the
// floor its clock went into. A destroyed stream is remembered for a while
// (engine_options::remembered_destroyed_streams); a forgotten one that is
// named again is taken for a stream never announced (Note [Implicit
// streams]).
//
// Note [Thread exit]
// thread_exit: the issuing thread ended and issues nothing more, so its
// context dies, and with it its per-thread default streams (S-DEFAULT-3:
// private to their thread, no other thread can name them); their pending
// work counts as a destroyed stream's does. The thread's accesses stay in
// the histories and are checked as before. A later record naming the same
// thread id (a producer that reused it) starts a new thread with a fresh
// clock.
#include "sanitizer/engine/engine_impl.h"

namespace streamsan {

void engine_impl::on(const record_header& h, const stream_destroy& r) {
  thread_state& t = thread_of(h);
  stream_state& s = stream_for(h, t, r.stream, operation_kind::stream_destroy);
  if (s.destroyed) return;  // a second destroy: reported by stream_for
  retire_stream(s);
  sweep_dead_contexts();
}

void engine_impl::on(const record_header& h, const thread_exit&) {
  thread_state* t = contexts_.find_thread(h.thread);
  if (t == nullptr) {
    ++stats_.ignored_records;  // never seen: nothing ends
    return;
  }
  for (const stream_id id : t->own_streams) {
    stream_state* s = contexts_.find_stream(id);
    if (s != nullptr && !s->destroyed) retire_stream(*s);
  }
  last_thread_ = nullptr;
  // Note [Host threads order what the log does not show]: what it saw may
  // have reached other threads through a join or a lock.
  exited_threads_saw_.join(t->context->clock);
  forget_context(t->context->slot, nullptr);
  contexts_.exit_thread(h.thread);
  sweep_dead_contexts();
}

void engine_impl::retire_stream(stream_state& s) {
  // The ThreadSanitizer bridge retires the stream's fiber (Note [Announcing
  // every join]); its slot may be handed to another stream afterwards.
  if (observer_ != nullptr && s.context != nullptr) observer_->stream_destroyed(s.context->ref());
  if (s.context == nullptr) {
    contexts_.destroy_stream(s);
  } else {
    const context_slot slot = s.context->slot;
    forget_context(slot, contexts_.destroy_stream(s));
  }
  dead_streams_.push_back(s.id);
  while (dead_streams_.size() > options_.remembered_destroyed_streams) {
    if (stream_state* old = contexts_.find_stream(dead_streams_.front())) {
      end_capture(*old);
      contexts_.forget_stream(dead_streams_.front());
    }
    dead_streams_.pop_front();
  }
}

void engine_impl::forget_context(context_slot slot, const execution_context* heir) {
  near_.forget(slot);
  if (!window_) return;
  // A destroyed stream's floor stands for it in later joins (rule 1), so in
  // the window its lane takes over the stream's last operation.
  if (heir != nullptr) {
    window_->hand_over_lane(slot, heir->slot);
  } else {
    window_->forget_lane(slot);
  }
}

// Every epoch stored state holds: the accesses in the histories of roots
// (live, or freed into a cache) and the allocating operation of
// stream-ordered allocations. (A free's epoch is only ever named, and the
// allocation keeps its context.) Event snapshots are clocks, not epochs: a
// component they hold for a reused slot is at most the slot's old high
// value, which covers nothing of the new owner.
void engine_impl::sweep_dead_contexts() {
  if (!contexts_.sweep_due()) return;
  const std::size_t used = contexts_.sweep([&](slot_sweep& sweep) {
    allocations_.for_each([&](const allocation& a) {
      sweep.pin(a.created_when);
      if (a.root == &a) a.history.for_each_entry([&](const access_entry& e) { sweep.pin(e.when); });
    });
  });
  events_.for_each([&](event_id, event_state& e) { e.snapshot.truncate(used); });
  exited_threads_saw_.truncate(used);
}

}  // namespace streamsan
