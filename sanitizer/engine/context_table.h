// Execution contexts (streams and host threads), their vector clocks, and
// the joins between them.
//
// Note [Skipping redundant joins]
// Every launch makes its stream join the issuing thread's clock (host
// program order precedes the device work it issues), and every operation on
// a blocking stream joins the legacy default stream. Most of these joins
// change nothing: the thread has not done anything since the last launch.
// Each context therefore carries a version, a stamp from one global counter
// taken whenever its clock changes, and each context remembers the newest
// version it has joined from every other context. Because a context's clock
// only grows, having joined version v' >= v of a context covers version v,
// so the join is skipped with one comparison. An event snapshot keeps the
// version of the stream it copied, so waits on it skip the same way.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/engine/id_table.h"
#include "sanitizer/engine/order_observer.h"
#include "sanitizer/engine/vector_clock.h"
#include "sanitizer/log/ids.h"
#include "sanitizer/log/record.h"

namespace streamsan {

struct execution_context {
  context_ref ref() const noexcept { return {kind, id}; }

  vector_clock clock;
  std::uint64_t version = 0;
  // seen[s]: the newest version of context s this context has joined.
  std::vector<std::uint64_t> seen;
  context_kind kind = context_kind::stream;
  std::uint32_t id = 0;  // raw stream_id or thread_id
  context_slot slot = 0;
};

struct device_state {
  std::vector<context_slot> streams;   // every stream ever created on it
  std::vector<context_slot> blocking;  // blocking and per-thread default streams
  std::vector<context_slot> legacy;    // legacy default stream(s)
  std::uint32_t capturing = 0;         // streams of this device now capturing
};

struct stream_state {
  execution_context* context = nullptr;
  device_state* device = nullptr;
  std::int32_t device_index = 0;
  stream_flavor flavor = stream_flavor::blocking;
  // What an operation on this stream implicitly joins first (Note [Legacy
  // default stream]): the device's blocking streams for the legacy stream,
  // its legacy stream(s) for a blocking one, nothing for a non-blocking one.
  const std::vector<context_slot>* implicit_sources = nullptr;
  bool destroyed = false;
  bool capturing = false;  // S-GRAPH-1: work is recorded, not executed
  graph_id capture_graph{};
};

struct thread_state {
  execution_context* context = nullptr;
  std::vector<string_id> nvtx;  // path ids, innermost last (Note [NVTX paths])
};

class context_table {
 public:
  // The thread's state, created on first sight with a fresh clock.
  thread_state& thread(thread_id id);
  stream_state* find_stream(stream_id id) const noexcept { return streams_.find(id); }
  // Creates the stream; its clock starts as a copy of `creator`'s.
  stream_state& create_stream(stream_id id, std::int32_t device, stream_flavor flavor,
                              const execution_context& creator);

  execution_context& context(context_slot slot) noexcept { return contexts_[slot]; }
  const execution_context& context(context_slot slot) const noexcept {
    return contexts_[slot];
  }
  std::size_t context_count() const noexcept { return contexts_.size(); }
  device_state* find_device(std::int32_t device) noexcept;

  // Who hears of every join and stream creation (Note [Announcing every
  // join]); not owned, nullptr for none.
  void set_observer(order_observer* observer) noexcept { observer_ = observer; }

  // dst's clock := max(dst, src), skipped when dst already saw src's
  // current version (Note [Skipping redundant joins]).
  void join(execution_context& dst, const execution_context& src) {
    if (observer_ != nullptr) [[unlikely]] announce_join(dst, src);
    if (src.slot < dst.seen.size() && dst.seen[src.slot] >= src.version) return;
    join_slow(dst, src.clock, src.slot, src.version);
  }
  // dst joins a snapshot of context `source_slot` taken at `source_version`.
  void join_snapshot(execution_context& dst, const vector_clock& snapshot,
                     context_slot source_slot, std::uint64_t source_version) {
    if (source_slot < dst.seen.size() && dst.seen[source_slot] >= source_version) return;
    join_slow(dst, snapshot, source_slot, source_version);
  }
  // The context's next operation; its clock changes, so its version does.
  epoch tick(execution_context& c) {
    c.version = ++last_version_;
    return c.clock.tick(c.slot);
  }

  // Applies the implicit synchronization of the default streams
  // (Note [Legacy default stream]) before an operation on `s`.
  void implicit_sync(stream_state& s) {
    if (s.implicit_sources == nullptr) return;
    for (const context_slot source : *s.implicit_sources) join(*s.context, contexts_[source]);
  }

  std::size_t bytes_held() const noexcept;

 private:
  execution_context& new_context(context_kind kind, std::uint32_t id);
  // Out of line: join() is on every launch's path.
  [[gnu::noinline, gnu::cold]] void announce_join(const execution_context& dst,
                                                   const execution_context& src);
  void join_slow(execution_context& dst, const vector_clock& src, context_slot src_slot,
                 std::uint64_t src_version);

  std::deque<execution_context> contexts_;  // index = slot; deque: stable refs
  id_table<stream_id, stream_state> streams_;
  id_table<thread_id, thread_state> threads_;
  std::map<std::int32_t, device_state> devices_;  // stable refs
  std::uint64_t last_version_ = 0;
  order_observer* observer_ = nullptr;
};

}  // namespace streamsan
