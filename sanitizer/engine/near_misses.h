// The last ordering calls of each stream and host thread that could have
// been meant to order a race, and the rules that name one of them as the
// race's cause (Note [Causes] in diagnostic.h).
//
// Note [Near misses are cheap]
// Only ordering calls are remembered (event waits, wait_stream, stream and
// event synchronizes, queries), never launches or accesses, and each is a
// handful of stores into a slot-indexed vector. The launch and access paths
// do not touch this table; it is read only when a new race is reported.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/engine/vector_clock.h"

namespace streamsan {

// An event's last record, as an ordering call remembers it.
struct record_site {
  std::uint64_t seq = 0;  // 0: never recorded
  context_slot slot = 0;
  stream_id stream{};
  thread_id thread{};
  stack_id stack{};
};

// One remembered ordering call.
struct ordering_call {
  std::uint64_t seq = 0;  // 0: none
  operation_kind op = operation_kind::event_wait;
  thread_id thread{};
  stack_id stack{};
  string_id nvtx{};
  stream_id stream{};  // the stream the call was issued on (waits)
  event_id event{};
  // The context whose work the call orders after: the event's recording
  // stream or the synchronized / waited stream.
  bool has_source = false;
  context_slot source = 0;
  stream_id source_stream{};
  record_site record;           // event calls: the record the call saw
  bool unrecorded = false;      // the event was never recorded: ordered nothing
  bool not_ready = false;       // a query that returned not-ready
  std::uint32_t reported_as = 0;  // the unrecorded-event diagnostic's id
};

struct near_miss_slot {
  ordering_call last_wait;       // streams: event wait or wait_stream
  ordering_call last_sync;       // threads: synchronize, or a complete query
  ordering_call last_not_ready;  // threads: a query that returned not-ready
};

// The two operations of a race, and the context the earlier one ran in.
struct race_sides {
  const operation_ref& current;
  const operation_ref& previous;
  context_slot previous_slot = 0;
};

class near_misses {
 public:
  near_miss_slot& at(context_slot slot) {
    if (slot >= slots_.size()) slots_.resize(slot + 1);
    return slots_[slot];
  }
  // The slot's context died: a later owner starts with no calls.
  void forget(context_slot slot) noexcept {
    if (slot < slots_.size()) slots_[slot] = near_miss_slot{};
  }
  const near_miss_slot* find(context_slot slot) const noexcept {
    return slot < slots_.size() ? &slots_[slot] : nullptr;
  }
  std::size_t bytes_held() const noexcept { return slots_.capacity() * sizeof(near_miss_slot); }

 private:
  std::vector<near_miss_slot> slots_;
};

// The call that explains why the current operation is not ordered after the
// previous one, if the current context's remembered calls show one.
// `calls` is the current context's slot (null when it has none).
std::optional<ordering_cause> find_cause(const near_miss_slot* calls, const race_sides& race);

}  // namespace streamsan
