// The ThreadSanitizer bridge: mirrors the engine's happens-before order and
// device accesses into the ThreadSanitizer runtime of a program built with
// -fsanitize=thread, so that TSan checks the program's own host reads and
// writes (which streamsan sees only through annotations) against device
// work. docs/tsan-bridge.md is the user's guide; the design is here.
//
// Note [Streams are fibers]
// Each stream is a TSan fiber. A kernel, copy, memset or graph launch that
// touches host-accessible memory (pinned, managed, registered) becomes a
// range read or write on its stream's fiber, with the launch's host stack
// pushed on the fiber's shadow stack, so TSan's report shows where the work
// was launched and the fiber's name says which stream it ran on. Device
// memory is left out: the host cannot touch it, and stream-to-stream races
// are the engine's. The bridge runs on the host thread that made the call,
// switching that thread to the stream's fiber without synchronization
// (switch_no_sync) and back before it returns, under its own mutex, so no
// fiber is ever active on two threads.
//
// Note [Edges are the engine's]
// The bridge derives no ordering of its own: it is an order_observer
// (sanitizer/engine/order_observer.h), and each announcement becomes TSan
// synchronization on a sync cell, a word of memory TSan keeps a clock for:
//   joined(dst, src)          src publishes its clock into its cell
//                             (__tsan_release; a context's clock only
//                             grows, so the cell always holds its latest
//                             state), dst acquires the cell;
//   event_recorded(e, src)    e's cell := src's clock, replacing the old
//                             one (a release store, __tsan_atomic64_store
//                             with release order: a later acquire sees only
//                             the latest store, as S-EVENT-1 wants);
//   event_joined(dst, e)      dst acquires e's cell;
//   stream_created(s, from)   a new fiber that acquires its creator's clock.
// Joins from the calling host thread release its real TSan clock at that
// moment, which holds every host access it made before the call, seen by
// the engine or not. So TSan orders at least what the engine orders (Note
// [Announcing every join]), plus what only TSan sees (the program's locks).
//
// Note [Host functions are real host code]
// A host function (S-HOSTFN-1) is a stream operation whose body is host
// code TSan sees, run by the driver on a thread of its own (on the sim: by
// the host thread, inside whatever call runs pending work). Whoever runs it
// calls begin_host_function / end_host_function around the body on that
// thread: the thread switches to a fresh fiber that has acquired the
// stream's clock as of the host function's place in the stream, and at the
// end the stream acquires the fiber's clock. But device work enqueued after
// the host function is announced before the function runs, and TSan checks
// accesses in the order it is told of them: had that later work gone to the
// fiber at once, the body would be checked against work that in fact
// follows it. So from a host function's place on, its stream's fiber
// defers what it is told (accesses, acquires, snapshots) until the function
// ends, and so does every fiber that acquires from a deferred one; a
// deferred release becomes a snapshot into a fresh cell. A host thread
// never waits for deferred work: it can only synchronize with work after a
// host function once the function has run, which is when the deferred work
// is replayed. Should the bridge be asked for such an order anyway (a host
// function never bracketed, a graph's host node), it gives the pending
// host functions up: their bodies are not checked (they run under
// __tsan_ignore_thread_begin), and the deferred work is replayed at once.
//
// Note [The bridge is invisible to TSan]
// While the bridge works, its thread is often switched to a stream's
// fiber, and whatever the thread does then is the fiber's in TSan's eyes:
// memory it touches, malloc and free, locks, and the shadow stack of any
// instrumented function it returns into. So:
//   - stream fibers are ignored (__tsan_ignore_thread_begin right after
//     they are made) except for the one range access the bridge reports at
//     a time; TSan's acquire and release are synchronization, not accesses,
//     and are not ignored;
//   - every public entry point returns on the fiber it was entered on (the
//     engine that calls the observer is instrumented in a TSan build of
//     streamsan, and its function exits pop the current shadow stack);
//   - the host-function fiber is not ignored (the body is what TSan must
//     check): nothing between the switch to it and the body allocates,
//     frees or locks, and the bridge's mutex is taken on the thread's own
//     fiber only;
//   - in a TSan build of streamsan itself the bridge is compiled without
//     instrumentation (sanitizer/tsan/meson.build).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "sanitizer/engine/order_observer.h"
#include "sanitizer/log/log_tables.h"
#include "sanitizer/tsan/tsan_runtime.h"

namespace streamsan::tsan {

struct bridge_statistics {
  std::uint64_t fibers_created = 0;
  std::uint64_t accesses_mirrored = 0;   // range reads and writes told to TSan
  std::uint64_t accesses_skipped = 0;    // device memory, or no address
  std::uint64_t edges_mirrored = 0;      // acquires of a cell
  std::uint64_t host_functions = 0;      // bracketed by begin/end
  std::uint64_t host_functions_unchecked = 0;  // given up, or never announced
  std::uint64_t operations_deferred = 0;
  std::uint64_t foreign_thread_joins = 0;  // a join from a host thread not calling
};

class host_function_run;

// What begin_host_function hands back; end_host_function takes it.
class host_function_ticket {
 public:
  host_function_ticket() = default;
  explicit operator bool() const noexcept { return run_ != nullptr; }

 private:
  friend class tsan_bridge;
  explicit host_function_ticket(std::shared_ptr<host_function_run> run) : run_(std::move(run)) {}
  std::shared_ptr<host_function_run> run_;
};

class tsan_bridge final : public order_observer {
 public:
  // `tables` resolves the stacks and names of the records the engine sees
  // (engine::tables()); both must outlive the bridge.
  tsan_bridge(const tsan_api& api, const log_tables& tables);
  // Replays what is still deferred and destroys the fibers. Call it on a
  // host thread, with no host function running.
  ~tsan_bridge() override;
  tsan_bridge(const tsan_bridge&) = delete;
  tsan_bridge& operator=(const tsan_bridge&) = delete;

  // ---- order_observer ----
  void record_begins(const record_header& h) override;
  void record_ends() override;
  void stream_created(context_ref stream, std::int32_t device, stream_flavor flavor,
                      context_ref creator) override;
  void stream_destroyed(context_ref stream) override;
  void joined(context_ref dst, context_ref src) override;
  void event_recorded(event_id event, context_ref src) override;
  void event_joined(context_ref dst, event_id event) override;
  void event_destroyed(event_id event) override;
  void host_function_enqueued(context_ref stream, string_id name, stack_id stack,
                              std::uint64_t seq) override;
  void accessed(const observed_access& a) override;

  // ---- host functions (Note [Host functions are real host code]) ----
  // On the thread about to run the next host function of `stream`; the
  // thread runs it as the function's fiber until end_host_function.
  host_function_ticket begin_host_function(stream_id stream);
  // A host function the engine was not told of (a graph's host node): its
  // body runs unchecked (__tsan_ignore_thread_begin).
  host_function_ticket begin_unannounced_host_function();
  void end_host_function(host_function_ticket ticket);

  // Replays deferred work now, giving pending host functions up (process
  // exit, or a host thread synchronizing with deferred work).
  void give_up_host_functions();

  bridge_statistics statistics() const;
  const tsan_api& api() const noexcept { return api_; }

 private:
  struct cell;
  struct deferred_op;
  struct stream_fiber;
  using cell_ptr = std::shared_ptr<cell>;

  // Returns the calling thread to its own fiber when an entry point ends
  // (Note [The bridge is invisible to TSan]).
  // Switches the calling OS thread back to its own fiber at scope exit.
  class back_home {
   public:
    explicit back_home(tsan_bridge& bridge) noexcept : bridge_(bridge) {}
    back_home(const back_home&) = delete;
    back_home& operator=(const back_home&) = delete;
    ~back_home() { bridge_.switch_to(nullptr); }

   private:
    tsan_bridge& bridge_;
  };

  // ---- contexts ----
  stream_fiber* stream_of(context_ref c);
  stream_fiber& stream_or_implicit(context_ref c);
  cell_ptr& thread_cell(std::uint32_t thread);
  bool is_calling_thread(context_ref c) const noexcept {
    return c.kind == context_kind::host_thread && c.id == calling_thread_;
  }
  // Switches the calling OS thread to `fiber`, or back to its own (nullptr).
  void switch_to(void* fiber);
  void switch_to(stream_fiber& s);
  void* own_fiber();

  // ---- fibers and deferral ----
  bool defers(const stream_fiber& s) const noexcept;
  // Runs `op` on `s` now, or defers it behind what is deferred there.
  void run_or_defer(stream_fiber& s, deferred_op op);
  // False when `op` must keep waiting.
  bool run(stream_fiber& s, deferred_op& op);
  void replay_deferred();
  // `s`'s clock as a cell to acquire: its own cell when nothing is
  // deferred (published first) or a snapshot of it now (`snapshot`: the
  // acquirer defers), else a snapshot taken when its deferred work reaches
  // this point.
  cell_ptr clock_of(stream_fiber& s, bool snapshot);
  // The calling host thread's clock, published now.
  cell_ptr host_clock(context_ref thread, bool snapshot);
  void acquire_on_host(const cell_ptr& c);
  void acquire_on(stream_fiber& dst, cell_ptr c);
  void release_store(cell& c);

  void access_on_fiber(stream_fiber& s, const deferred_op& op);
  // A range read or write on whatever the calling thread runs as now.
  void range_access(const deferred_op& op, void* pc);
  // A new stream fiber, ignored (Note [The bridge is invisible to TSan]);
  // the calling thread is left on its own fiber.
  void* new_stream_fiber(const std::string& name);
  void destroy_stream_fiber(stream_fiber& s);
  // Up to max_frames of the stack, innermost first.
  static constexpr std::size_t max_frames = 64;
  struct frame_list {
    std::array<std::uint64_t, max_frames> frames{};
    std::size_t size = 0;
  };
  frame_list frames_of(stack_id stack) const;
  // Pushes frames [from, size) outermost first, as instrumentation would.
  void push_frames(const frame_list& frames, std::size_t from) const;

  const tsan_api api_;
  const log_tables& tables_;
  // Held from record_begins to record_ends, and by the host-function calls
  // (which may run on the thread of a record: recursive).
  mutable std::recursive_mutex mutex_;

  std::unordered_map<std::uint32_t, std::unique_ptr<stream_fiber>> streams_;  // raw(stream_id)
  std::unordered_map<std::uint32_t, cell_ptr> threads_;                       // raw(thread_id)
  std::unordered_map<std::uint32_t, cell_ptr> events_;                        // raw(event_id)
  // Host functions not yet begun, per stream, in stream order.
  std::unordered_map<std::uint32_t, std::deque<std::shared_ptr<host_function_run>>> to_begin_;
  std::vector<stream_fiber*> deferring_;  // streams with deferred work

  // The record being handled (Note [Streams are fibers]).
  std::uint32_t calling_thread_ = 0;
  void* own_fiber_ = nullptr;      // the calling thread's fiber, once it left it
  void* current_fiber_ = nullptr;  // nullptr: its own

  bridge_statistics stats_;
};

}  // namespace streamsan::tsan
