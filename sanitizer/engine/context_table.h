// Execution contexts (streams and host threads), their vector clocks, the
// joins between them, and the retirement of the slots of dead ones.
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
// version of the stream it copied, so waits on it skip the same way. A slot
// that changed owner (Note [Retiring context slots]) still holds versions of
// its old owner in other contexts' `seen`; they are older than any version
// of the new owner, so a context join is never skipped wrongly, and a
// snapshot of an old owner is never skipped (its version predates the
// slot's `owner_since`).
//
// Note [Retiring context slots]
// A clock has one component per slot, so without reuse every stream and
// thread ever created costs every later clock 16 bytes (clock and `seen`),
// and each new stream copies its creator's clock: memory quadratic in the
// streams ever created (4.6 GiB of clocks after 20,000 create / launch /
// synchronize / destroy cycles). Slots of dead contexts (destroyed streams,
// exited threads) are therefore reused, as ThreadSanitizer reuses the slots
// of finished threads, with these rules:
//   1. A dead context's clock is dropped at once. Nothing can join it later
//      except device synchronize, a synchronizing free and the legacy
//      stream (S-STREAM-9: its pending work still completes); for them the
//      clock is first joined into the device's floor context for its class
//      (legacy, blocking, other), which takes its place in the device's
//      lists. Joining the floor is exactly joining every dead stream.
//   2. Epochs continue across owners: a new owner's own component starts at
//      the highest value the slot ever reached, so no clock anywhere covers
//      an operation of the new owner by accident (every component a clock
//      holds for the slot is at most that value).
//   3. A slot is handed to a new owner only once no stored epoch names it:
//      no access in any history, no stream-ordered allocation's `created`.
//      Otherwise whoever synchronizes with the new owner would look ordered
//      after the old owner's accesses too. ThreadSanitizer waits instead
//      until every live clock covers the old owner, which suffices there
//      because a new thread synchronizes with its creator; here a host
//      thread appears without one (it is unordered with all earlier work),
//      so only "nothing refers to it any more" is exact. Which epochs are
//      still stored is found by a sweep over the allocations' histories,
//      run once enough contexts have died since the last one (at least
//      engine_options::context_sweep_batch, and at least 1/8 of the
//      entries the last sweep visited, so sweeping costs O(1) amortized per
//      dead context). Epochs are only ever created by live contexts, so a
//      slot found unreferenced stays so.
//   4. Reports name the context of an epoch through the slot's journal of
//      owners (first and last own-clock value of each); a sweep drops the
//      dead owners no stored epoch names any more. (A free, which reports
//      name too, keeps its context in its allocation.)
//   5. Components of free slots mean nothing (nothing stored refers to
//      them), so a sweep trims every clock to the highest slot in use; new
//      contexts take the lowest free slot.
// Memory is then O(S) per clock, S = live contexts + floors + dead contexts
// still named by stored accesses (each needs one; at most the number of
// history entries) + contexts dead since the last sweep. See docs/engine.md
// for the bound in bytes.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
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

// One owner of a slot: epochs (slot, c) with first <= c <= last are its
// operations (Note [Retiring context slots], rule 4).
struct slot_owner {
  static constexpr std::uint64_t alive = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t first = 1;
  std::uint64_t last = alive;
  context_kind kind = context_kind::stream;
  std::uint32_t id = 0;
  std::uint64_t named_in_sweep = 0;
};

using context_list = std::vector<execution_context*>;

struct device_state {
  context_list streams;   // live streams and the floors (Note [Retiring context slots])
  context_list blocking;  // blocking and per-thread default streams, their floor
  context_list legacy;    // legacy default stream(s), their floor
  std::uint32_t capturing = 0;  // streams of this device now capturing
  // The joined clocks of the destroyed streams of each class.
  execution_context* legacy_floor = nullptr;
  execution_context* blocking_floor = nullptr;
  execution_context* other_floor = nullptr;
};

struct stream_state {
  stream_id id{};
  execution_context* context = nullptr;  // nullptr once destroyed
  device_state* device = nullptr;
  std::int32_t device_index = 0;
  stream_flavor flavor = stream_flavor::blocking;
  // What an operation on this stream implicitly joins first (Note [Legacy
  // default stream]): the device's blocking streams for the legacy stream,
  // its legacy stream(s) for a blocking one, nothing for a non-blocking one.
  const context_list* implicit_sources = nullptr;
  bool destroyed = false;
  bool capturing = false;  // S-GRAPH-1: work is recorded, not executed
  graph_id capture_graph{};
};

struct thread_state {
  execution_context* context = nullptr;
  std::vector<string_id> nvtx;  // path ids, innermost last (Note [NVTX paths])
  // Per-thread default streams it created: private to it (S-DEFAULT-3), so
  // they end with it.
  std::vector<stream_id> own_streams;
};

class context_table;

// Collects, during a sweep, the epochs that stored state still names.
class slot_sweep {
 public:
  // An epoch stored where its coverage may still be checked (a history
  // entry, an allocation's `created`): its slot cannot change owner, and its
  // owner stays in the slot's journal, for reports.
  void pin(epoch e) noexcept;

 private:
  friend class context_table;
  slot_sweep(context_table& table, std::uint64_t serial);
  slot_owner* owner_of(epoch e) noexcept;

  context_table& table_;
  std::uint64_t serial_;
  std::vector<bool> pinned_;
  std::uint64_t visited_ = 0;
};

struct context_counts {
  std::uint64_t live = 0;       // streams and threads
  std::uint64_t floors = 0;
  std::uint64_t dead = 0;       // dead, slot not yet reusable
  std::uint64_t slots = 0;      // slot numbers in use or free (high-water mark)
  std::uint64_t free_slots = 0;
  std::uint64_t retired = 0;    // slots handed back so far
  std::uint64_t sweeps = 0;
};

class context_table {
 public:
  // sweep_batch: Note [Retiring context slots], rule 3; 0 = never reuse.
  explicit context_table(std::uint32_t sweep_batch) : sweep_batch_(sweep_batch) {}
  context_table(const context_table&) = delete;
  context_table& operator=(const context_table&) = delete;

  // The thread's state, created on first sight with a fresh clock.
  thread_state& thread(thread_id id);
  thread_state* find_thread(thread_id id) const noexcept { return threads_.find(id); }
  // Visits (thread_id, const thread_state&) of every live thread.
  template <class F>
  void for_each_thread(F&& f) const {
    threads_.for_each(f);
  }
  // The thread ended: its context dies (its per-thread default streams are
  // the caller's to destroy first).
  void exit_thread(thread_id id);

  stream_state* find_stream(stream_id id) const noexcept { return streams_.find(id); }
  // Creates the stream; its clock starts as a copy of `creator`'s.
  stream_state& create_stream(stream_id id, std::int32_t device, stream_flavor flavor,
                              execution_context& creator);
  // The stream is destroyed: its context dies, its clock joins its device's
  // floor, which is returned (nullptr if it was destroyed before). The
  // stream_state stays (destroyed) until forget_stream.
  const execution_context* destroy_stream(stream_state& s);
  void forget_stream(stream_id id) noexcept { streams_.erase(id); }

  device_state* find_device(std::int32_t device) noexcept;

  // Who hears of every join and stream creation (Note [Announcing every
  // join]); not owned, nullptr for none.
  void set_observer(order_observer* observer) noexcept { observer_ = observer; }
  // Who made the operation at `e`; nullptr if no journal entry names it.
  const slot_owner* owner_of(epoch e) const noexcept;

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
    if (source_slot < dst.seen.size() && dst.seen[source_slot] >= source_version &&
        source_version >= slots_[source_slot].owner_since) {
      return;
    }
    join_slow(dst, snapshot, source_slot, source_version);
  }
  // The context's next operation; its clock changes, so its version does.
  //
  // Note [A context's own component is always there]
  // A tick tested whether the clock had its own component yet, and grew it
  // if not: six instructions of every launch for what only a context's
  // first operation can need. A context gets the component when it is made
  // (new_context()); joins only grow a clock, and a sweep trims clocks to
  // the highest slot not free, which a live context's own slot never is.
  // So the tick reads the component without testing. engine_replay under
  // callgrind (release, 2026-12-03): 461.7 -> 454.7 instructions per launch.
  epoch tick(execution_context& c) {
    c.version = ++last_version_;
    return c.clock.tick_present(c.slot);
  }

  // Applies the implicit synchronization of the default streams
  // (Note [Legacy default stream]) before an operation on `s`.
  void implicit_sync(stream_state& s) {
    if (s.implicit_sources == nullptr) return;
    for (const execution_context* source : *s.implicit_sources) join(*s.context, *source);
  }

  // ---- slot retirement (Note [Retiring context slots]) ----
  bool sweep_due() const noexcept {
    return sweep_batch_ != 0 && deaths_since_sweep_ >= sweep_batch_ &&
           deaths_since_sweep_ >= last_sweep_visits_ / 8;
  }
  // `visit(sweep)` must pin every epoch that stored state holds.
  // Returns the number of slots clocks need from now on (trim event
  // snapshots to it).
  template <class Visit>
  std::size_t sweep(Visit&& visit) {
    slot_sweep s(*this, ++sweeps_);
    visit(s);
    return finish_sweep(s);
  }

  context_counts counts() const noexcept;
  std::size_t bytes_held() const noexcept;

 private:
  // Out of line: join() is on every launch's path.
  [[gnu::noinline, gnu::cold]] void announce_join(const execution_context& dst,
                                                   const execution_context& src);
  friend class slot_sweep;

  struct slot_record {
    std::unique_ptr<execution_context> context;  // the live owner, if any
    std::uint64_t high = 0;         // highest own-clock value any owner reached
    std::uint64_t owner_since = 0;  // the current owner's first version
    std::vector<slot_owner> owners; // journal, oldest first
    bool dead = false;              // owner died; waits for a sweep
    bool free = false;              // reusable
  };

  execution_context& new_context(context_kind kind, std::uint32_t id,
                                 const execution_context* creator);
  context_slot take_slot();
  void kill(execution_context& c);
  execution_context& floor_for(device_state& d, stream_flavor flavor);
  std::size_t finish_sweep(slot_sweep& s);
  void join_slow(execution_context& dst, const vector_clock& src, context_slot src_slot,
                 std::uint64_t src_version);

  std::uint32_t sweep_batch_;
  std::vector<slot_record> slots_;    // index = slot
  std::vector<context_slot> free_;    // min-heap: the lowest free slot first
  std::vector<context_slot> dead_;    // slots whose owner died, not yet free
  id_table<stream_id, stream_state> streams_;
  id_table<thread_id, thread_state> threads_;
  std::map<std::int32_t, device_state> devices_;  // stable refs
  std::uint64_t last_version_ = 0;
  order_observer* observer_ = nullptr;
  std::uint64_t deaths_since_sweep_ = 0;
  std::uint64_t last_sweep_visits_ = 0;
  std::uint64_t sweeps_ = 0;
  std::uint64_t retired_ = 0;
  std::uint64_t live_ = 0;
  std::uint64_t floors_ = 0;
};

}  // namespace streamsan
