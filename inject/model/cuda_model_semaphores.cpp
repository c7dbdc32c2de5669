// External semaphores: cudaSignalExternalSemaphoresAsync,
// cudaWaitExternalSemaphoresAsync and their driver twins.
//
// Note [External semaphores]
// An external semaphore (imported from Vulkan, Direct3D, NvSciSync, ...) is
// signalled and waited on by streams of this process and by work of the
// other API, which streamsan does not see. A wait is satisfied by a signal
// that may come from either side: a binary semaphore's pending signal, or,
// for a timeline semaphore or fence, the first signal that reaches the
// awaited value. Matching the values (a wait for v after this process's
// signals of values <= v) is not enough to avoid false reports: the signal
// that satisfies a wait may come from outside, and the outside work that
// made it may itself have waited for any signal this process issued before
// (CUDA signals semaphore A, Vulkan waits for A, renders, signals B, CUDA
// waits for B on another stream: that stream is ordered after the first
// one's work, through Vulkan). So the model takes the outside as one stream
// of its own that is ordered after every signal this process issues (each
// signal hands the signalling stream's work over to it through an event
// the model owns), and a wait on any external semaphore is ordered after
// that stream: after every signal this process issued before the wait, on
// any external semaphore, at any value. That is the most a wait can be
// ordered after; it is more than CUDA promises, so it can only hide races
// (a waiter against work before an unrelated signal), never invent one. A
// wait with no signal before it orders nothing this process did (its
// signal comes from outside), and is no error. The values, the semaphore
// kinds and the keyed-mutex keys are therefore not followed; importing and
// destroying a semaphore need no state (inert). On a capturing stream the
// calls become graph nodes, which instantiation lists as unmodelled.
#include "inject/model/cuda_model.h"

namespace streamsan::injection {

void cuda_model::semaphores_signalled(const call_site& at, stream_arg s) {
  const stream_ref on = prepare(s);
  const std::int32_t device = driver_.current_device();
  model_lock lock(mutex_);
  const stream_id stream = resolve_stream(lock, at, on);
  if (capturing_.contains(raw(stream))) return;  // a node of the graph being captured
  if (!outside_stream_) {
    outside_stream_ =
        new_stream_locked(at, device, stream_flavor::non_blocking, 0, stream_role::stand_in);
    outside_event_ = rec_.new_event_id();
    emit(at, event_create{outside_event_, event_flag_none});
  }
  auto [handoff, fresh] = handoff_events_.try_emplace(raw(stream));
  if (fresh) {
    handoff->second = rec_.new_event_id();
    emit(at, event_create{handoff->second, event_flag_none});
  }
  emit(at, event_record{handoff->second, stream});
  emit(at, event_wait{handoff->second, *outside_stream_});
  emit(at, event_record{outside_event_, *outside_stream_});
}

void cuda_model::semaphores_waited(const call_site& at, stream_arg s) {
  const stream_ref on = prepare(s);
  model_lock lock(mutex_);
  const stream_id stream = resolve_stream(lock, at, on);
  if (capturing_.contains(raw(stream))) return;
  if (!outside_stream_) return;  // no signal yet: only outside work precedes it
  emit(at, event_wait{outside_event_, stream});
}

// A destroyed stream's handoff event goes with it: what it handed over is in
// the outside stream's clock already.
void cuda_model::drop_handoff_event_locked(const call_site& at, stream_id stream) {
  const auto it = handoff_events_.find(raw(stream));
  if (it == handoff_events_.end()) return;
  emit(at, event_destroy{it->second});
  handoff_events_.erase(it);
}

}  // namespace streamsan::injection
