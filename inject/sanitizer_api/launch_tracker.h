// Measures kernel launches: patches modules, gives each measured launch a
// footprint table, and brings tables back once their kernels have run
// (Note [Footprints are coalesced on the device], Note [Measured footprints
// arrive late]).
//
// Note [A launch is read back when its event has completed]
// Synchronizing at each launch serializes streams that the program runs
// concurrently (the probe: a 4-stream pipeline ran 1.27x native, 1.11x
// without). Instead, at the exit of the call that launched, the tracker
// records an event of its own on the launch's stream, and reads back the
// launches at the head of its queue whose events have completed: at every
// API call (a query, 0.3 us), with a wait when the queue exceeds its bound or
// at exit. The read goes through a stream of the tracker's own, which waits
// for nothing the program issued. Patching and table set-up happen outside
// the launch callbacks' restricted region: a module is patched when it is
// loaded (patching from a launch callback hangs the driver).
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "inject/precise/footprint_decode.h"
#include "inject/precise/footprint_layout.h"
#include "inject/sanitizer_api/ordered_worker.h"
#include "inject/sanitizer_api/sanitizer_library.h"
#include "sanitizer/log/threads_with_state.h"

namespace streamsan::sanitizer_api {

// The driver entry points the tracker calls itself (resolved by the caller).
struct tracker_driver {
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventQuery) event_query = nullptr;
  decltype(&::cuEventSynchronize) event_synchronize = nullptr;
  decltype(&::cuEventDestroy) event_destroy = nullptr;
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuCtxPushCurrent) ctx_push = nullptr;
  decltype(&::cuCtxPopCurrent) ctx_pop = nullptr;
  decltype(&::cuKernelGetFunction) kernel_get_function = nullptr;
  decltype(&::cuFuncGetModule) func_get_module = nullptr;
  decltype(&::cuFuncGetName) func_get_name = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuStreamIsCapturing) stream_is_capturing = nullptr;
  decltype(&::cuStreamQuery) stream_query = nullptr;
  // Note [Read-backs land in page-locked memory] (inject/precise/staging_buffer.h).
  decltype(&::cuMemHostRegister) mem_host_register = nullptr;
  decltype(&::cuMemHostUnregister) mem_host_unregister = nullptr;
};
// From the driver already loaded in the process; nullopt when any is missing.
std::optional<tracker_driver> resolve_tracker_driver();

struct tracker_options {
  // Slots (a page and an access kind each) of a kernel's first table when
  // the caller has no estimate; later launches of the kernel get twice what
  // its largest launch used (and four times a table it overflowed), with
  // room (Note [Tables sized from measured launches]).
  std::uint32_t initial_slots = 256;
  std::size_t max_pending = 256;  // launches in flight before a wait
  // Device memory of the tables in flight before a wait.
  std::size_t max_pending_bytes = std::size_t{1} << 30;
  // The device function patched into global accesses: the benchmarks'
  // probe swaps in the pricing variants of footprint_patches.cu.
  const char* global_access_function = "streamsan_global_access";
  // Runs a launch's pages may hold before it is not a measurement (Note [A
  // footprint too fragmented to use] in inject/precise/footprint_decode.h).
  std::size_t max_runs = precise::max_runs_per_launch;
};

struct tracker_stats {
  std::uint64_t measured = 0;
  std::uint64_t incomplete = 0;  // table overflowed: footprint not usable
  // of which too fragmented (Note [A footprint too fragmented to use])
  std::uint64_t too_fragmented = 0;
  // No table could be had, or it could not be read back or decoded: the
  // launch keeps its inferred footprint.
  std::uint64_t failed = 0;
  // Of failed: a decode or its hand-over threw (Note [A decoding job that
  // throws]).
  std::uint64_t decode_failed = 0;
  // Decoding jobs whose exception reached the worker's last resort
  // (ordered_worker::failures()): their launch waits for exit.
  std::uint64_t jobs_thrown = 0;
  std::uint64_t pages = 0;
  std::uint64_t fragmented_pages = 0;
  std::uint64_t bytes_read_back = 0;
  // Launches that took slots of their table's spill region (Note [The
  // room to grow is read only when used] in footprint_layout.h).
  std::uint64_t spilled = 0;
  std::uint64_t waits = 0;       // read-backs that had to wait (bound, exit)
  // In flight when the program was stopped by a signal: never read back
  // (Note [Launches in flight when the program is stopped]).
  std::uint64_t abandoned = 0;
  std::uint64_t modules_patched = 0;
  std::uint64_t modules_unpatched = 0;
  // Where a measured launch's host time goes, for STREAMSAN_DEBUG: setting
  // up its table at LAUNCH_BEGIN (a memset on its stream, the launch data),
  // and reading it back (the copies, which wait for them, and the decoding),
  // on whichever program thread polled.
  std::uint64_t setup_ns = 0;
  std::uint64_t read_back_ns = 0;
  std::uint64_t copy_ns = 0;  // of read_back_ns, inside the copies
  // Finishing the decodes (sorting pages, making intervals): on the
  // decoding thread when there is one, else part of read_back_ns.
  std::uint64_t decode_ns = 0;
};

class launch_tracker {
 public:
  using launch_id = std::uint64_t;
  // A measured launch's footprint (incomplete ones too: decoded.complete).
  using footprint_callback =
      std::function<void(launch_id, const precise::decoded_footprint& decoded)>;
  // A launch of `function` whose decode or hand-over threw `why` (Note [A
  // decoding job that throws]).
  using failure_callback = std::function<void(CUfunction function, const char* why)>;

  launch_tracker(const sanitizer_library& lib, const tracker_driver& driver,
                 tracker_options options = {});
  launch_tracker(const launch_tracker&) = delete;
  launch_tracker& operator=(const launch_tracker&) = delete;
  // Frees its tables and events, those of launches never read back too: an
  // owner that destroys the tracker while measured kernels may still run
  // must wait for them first (poll(true, ...)). The injected library never
  // destroys its tracker (its session lives until the process ends).
  ~launch_tracker();

  enum class patch_outcome {
    patched,  // now or before
    refused,  // by the Sanitizer API; the reason in `why`
    busy,     // another thread's (un)patch held it longer than `wait`
  };
  // Patches `module`'s global-memory accesses and asynchronous copies. With
  // a `wait`, waits at most that long for another thread's patch or unpatch
  // (Note [A module-loaded callback waits a bounded time]).
  patch_outcome patch_module(CUcontext ctx, CUmodule module, std::string& why,
                             std::optional<std::chrono::milliseconds> wait = std::nullopt);
  // The default mode's steady state patches nothing: every launch asks,
  // and hears no without a call or the lock.
  bool is_patched(CUmodule module) const {
    return patched_count_.load(std::memory_order_acquire) != 0 && patched_set_holds(module);
  }
  // Removes the patches once no measured launch of the module is in flight;
  // false (and nothing done) while one is.
  bool unpatch_module(CUmodule module, std::string& why);
  std::vector<CUmodule> patched_modules() const;
  void module_unloaded(CUmodule module);

  // How many times its kernel's hint a later launch's table may be, when
  // its estimate is larger (Note [Tables sized from measured launches]);
  // STREAMSAN_TABLE_HEADROOM sets it before the first launch.
  // The same as inject/session/options.h's default_table_headroom, which
  // `streamsan run` passes; this header cannot be included there (sanitizer.h).
  static constexpr std::uint32_t default_estimate_headroom = 16;
  void set_estimate_headroom(std::uint32_t factor) noexcept {
    estimate_headroom_ = factor == 0 ? 1 : factor;
  }

  // LAUNCH_BEGIN: gives the launch a table (when `measure`) sized from
  // `slot_estimate` (the caller's estimate from the kernel's arguments; 0
  // for none) until its kernel was measured, then from its measurements
  // (Note [Tables sized from measured launches] in launch_tracker.cpp).
  void launch_begin(const Sanitizer_LaunchData& launch, bool measure,
                    std::uint32_t slot_estimate = 0);
  // LAUNCH_END: remembers the launch for launched() on this thread.
  void launch_end(const Sanitizer_LaunchData& launch);
  // At the exit of the API call that launched, on the launching thread: the
  // measured launch it made, now in flight; nullopt when it made none.
  // Every API call's exit asks; only a thread handed a table can have one
  // (Note [A thread-local looked at only when it can hold something]).
  std::optional<launch_id> launched() {
    if (threads_with_tables_.none()) return std::nullopt;
    return this_threads_launch();
  }

  // ---- graph kernel nodes (Note [Which graph nodes are measured]) ----
  // A graph node callback (GRAPHS_NODE_LAUNCH_BEGIN, kernel nodes), on the
  // thread of the graph launch call, for every kernel node of the launch of
  // `exec`: gives the node's function a table through its per-function data
  // when `measure`, its module is patched, it is the first node of its
  // function in this launch that never had per-launch data (Note [A graph
  // node keeps its per-launch data]), and no graph launch in progress on
  // another thread runs that function. Returns whether it did. A node of a
  // patched module that it does not measure reads null (Note [Unmeasured
  // graph nodes read null]): its function's data, or, after a measured
  // sibling, null per-launch data, which keeps it out of the table.
  bool graph_node_begin(const Sanitizer_LaunchData& launch, std::uintptr_t exec,
                        std::uintptr_t node, bool measure);
  // A kernel node launched outside a graph launch call that we saw (an
  // upload, a launch from the device): never measured; null per-launch
  // data when its module is patched.
  void graph_node_unmeasured(const Sanitizer_LaunchData& launch, std::uintptr_t exec,
                             std::uintptr_t node);
  // The exec was destroyed: what is known of its nodes is forgotten (its
  // handle may be reused by another exec).
  void forget_graph_exec(std::uintptr_t exec);
  struct measured_node {
    launch_id id = 0;
    std::uintptr_t node = 0;  // the CUgraphNode
  };
  // At the exit of the graph launch call, on its thread: takes the tables
  // back from the functions (their data is null again), and puts them in
  // flight behind one event on the launch's stream; those whose function
  // another thread's graph launch ran meanwhile are released unread once it
  // completes.
  std::vector<measured_node> graph_launched();

  // Reads back every launch at the head of the queue whose kernel has
  // completed (all of them with wait_all), in launch order. `done` gets
  // each footprint, in launch order: on the calling thread, or on the
  // decoding thread once set_decode_thread(true) (then wait_decoded() after
  // poll(true) waits for all of them).
  void poll(bool wait_all, const footprint_callback& done);
  // Note [Decoded on a thread of its own]: before the first poll.
  void set_decode_thread(bool on) noexcept { decode_thread_ = on; }
  // Told of each launch whose decode or hand-over threw, on the thread that
  // decoded it, before the launch is handed over unmeasured (Note [A
  // decoding job that throws]). Before the first poll.
  void set_failure_callback(failure_callback told) { failure_callback_ = std::move(told); }
  // Tests only: runs on the thread that decodes, before the second half of
  // every decode (not for a table that could not be read back); what it
  // throws, the decode threw (Note [A decoding job that throws]). Before the
  // first poll.
  void set_decode_hook(std::function<void()> hook) { decode_hook_ = std::move(hook); }
  // Returns once every footprint read back so far was handed to `done`.
  void wait_decoded();
  // wait_decoded(), or false once `deadline` has passed first.
  bool wait_decoded_until(std::chrono::steady_clock::time_point deadline);
  // Note [Launches in flight when the program is stopped]: hands every
  // launch still in flight to `done` unmeasured, in launch order, without
  // waiting for its kernel or reading its table; returns how many. 0 when
  // another thread is reading back (the caller's time is bounded).
  std::size_t abandon(const footprint_callback& done);
  // A poll(true) under way (the exit's drain) stops waiting for kernels
  // and returns; what it left in flight is for abandon(). Lock-free: a
  // signal handler calls it (Note [A signal while the report is made]).
  void hurry() noexcept { hurried_.store(true, std::memory_order_release); }
  std::size_t in_flight() const noexcept { return in_flight_count_.load(std::memory_order_acquire); }

  // The context is being destroyed: what was pinned in it and its private
  // stream go with it (Note [Read-backs land in page-locked memory]).
  // Never waits: the driver may hold a lock of its own here.
  // Note [What a destroyed context took with it]
  void context_destroying(CUcontext ctx);

  tracker_stats stats() const;

 private:
  // A context's generation grows when it is destroyed: what was made in an
  // older generation (a pin, a private stream) went with it and its handle
  // is never used again, even when a new context gets the same one (Note
  // [Read-backs land in page-locked memory]).
  class context_generations {
   public:
    std::uint64_t of(CUcontext ctx);
    bool current(CUcontext ctx, std::uint64_t generation) const noexcept;
    void destroyed(CUcontext ctx);

   private:
    mutable std::mutex mutex_;
    std::map<CUcontext, std::uint64_t> generations_;
  };
  // Note [Read-backs land in page-locked memory]: pins in the context of
  // the launch being read back (`ctx`, set under poll_mutex_); a pin of a
  // destroyed context is not taken back.
  class driver_pinning final : public precise::host_pinning {
   public:
    driver_pinning(const tracker_driver& driver, context_generations& contexts)
        : driver_(driver), contexts_(contexts) {}
    std::optional<std::uintptr_t> pin(void* p, std::size_t bytes) noexcept override;
    void unpin(void* p, std::uintptr_t token) noexcept override;
    CUcontext ctx = nullptr;  // poll_mutex_

   private:
    const tracker_driver& driver_;
    context_generations& contexts_;
    std::mutex mutex_;
    std::map<std::uintptr_t, std::pair<CUcontext, std::uint64_t>> pins_;  // by token
    std::uintptr_t next_token_ = 0;
  };

  struct table {
    void* device = nullptr;
    precise::table_layout layout;
    CUcontext ctx = nullptr;
    std::uint64_t generation = 0;  // of ctx (context_generations)
  };
  struct launch_state {
    launch_id id = 0;
    table t;
    CUfunction function = nullptr;
    CUmodule module = nullptr;
    CUstream stream = nullptr;
    CUcontext ctx = nullptr;
    CUevent done = nullptr;
    bool owns_event = true;  // the graph nodes of one launch share its event
    // A dropped graph node table: the node may still write into it, so it
    // waits for the launch's event like the others, then is released
    // unread (Note [Which graph nodes are measured]).
    bool dropped = false;
  };
  // A graph launch's measured nodes until the call's exit (by thread).
  struct graph_node_table {
    std::uintptr_t node = 0;
    CUfunction function = nullptr;
    CUmodule module = nullptr;
    CUstream stream = nullptr;
    CUcontext ctx = nullptr;
    Sanitizer_StreamHandle hstream = nullptr;
    table t;
    // Another thread's graph launch in progress runs the function: the
    // table is released unread.
    bool dropped = false;
  };
  struct graph_launch_state {
    std::vector<graph_node_table> nodes;
    std::set<CUfunction> functions;  // of every kernel node seen
    // Whether a node of the function measures it in this launch, decided at
    // its first node without per-launch data (Note [Unmeasured graph nodes
    // read null]).
    std::map<CUfunction, bool> measured;
  };
  // Per function: the graph launches in progress with a node of it, and
  // whether two were at once (a table set then may hold either's accesses).
  struct function_use {
    std::uint32_t launches = 0;
    bool contended = false;
  };
  // An event recorded on `stream` after what was just enqueued there;
  // nullptr when none could be (the stream was then synchronized).
  CUevent event_after(CUcontext ctx, std::uint64_t generation, CUstream stream,
                      Sanitizer_StreamHandle hstream);
  void enqueue_locked(launch_state s);

  std::optional<table> acquire_locked(CUcontext ctx, const precise::table_layout& layout,
                                      Sanitizer_StreamHandle stream);
  // A table for `launch`, cleared on its stream (Note [Tables sized from
  // measured launches]); nullopt, counted as failed, when none could be had.
  std::optional<table> cleared_table_locked(const Sanitizer_LaunchData& launch,
                                            std::uint32_t slot_estimate);
  // The table for a launch whose kernel left hint `learned` (0: never
  // measured): its main and spill regions.
  precise::table_layout layout_for_launch(std::uint32_t learned,
                                          std::uint32_t slot_estimate) const;
  void release_locked(const table& t);
  void null_launch_data_locked(const Sanitizer_LaunchData& launch);
  // Null per-launch data for a node of a patched module, remembered (Note
  // [A graph node keeps its per-launch data]).
  void null_node_launch_data_locked(const Sanitizer_LaunchData& launch, std::uintptr_t exec,
                                    std::uintptr_t node);
  bool measure_node_locked(graph_launch_state& mine, const Sanitizer_LaunchData& launch,
                           std::uintptr_t node);
  // The function's data null (Note [Unmeasured graph nodes read null]).
  void null_function_data_locked(CUfunction f);
  // Its table back to the pool, its event (when it owns it) to the free ones.
  void release_launch_locked(const launch_state& l);
  Sanitizer_StreamHandle private_stream(CUcontext ctx);
  CUevent new_event(CUcontext ctx);
  std::vector<launch_state> take_completed(bool wait_all);
  bool completed_unless_hurried(CUevent done);
  // The first half of its decode (precise::fetch_footprint: every copy)
  // into `scratch`; copy_ns: the time inside its copies is added there.
  precise::decoded_footprint read_back(const launch_state& l, precise::decode_scratch& scratch,
                                       std::uint64_t& copy_ns);
  // The second half, then `done`: here, or on the decoding thread.
  void finish(const launch_state& l, precise::decoded_footprint d,
              precise::decode_scratch* scratch, const footprint_callback& done);
  template <class Job>
  void in_launch_order(Job job);
  // The decoding job (Note [A decoding job that throws]).
  void hand_over(launch_id id, CUfunction function, precise::decoded_footprint& d,
                 precise::decode_scratch* scratch, const footprint_callback& done);
  void finish_decode(precise::decoded_footprint& d, precise::decode_scratch* scratch);
  void hand_over_unmeasured(launch_id id, CUfunction function, const char* why,
                            bool counted_failed, const footprint_callback& done);
  void retire_locked(const launch_state& l, const precise::decoded_footprint& d);

  const sanitizer_library& lib_;
  const tracker_driver driver_;
  const tracker_options options_;
  context_generations contexts_;
  driver_pinning pinning_{driver_, contexts_};  // before the scratches: they unpin through it
  mutable std::mutex mutex_;
  // Note [A thread-local looked at only when it can hold something]: the
  // threads whose launch_begin handed them a table not yet taken back by
  // launched().
  threads_with_state threads_with_tables_;
  void forget_this_threads_launch() noexcept;
  std::optional<launch_id> this_threads_launch();
  bool patched_set_holds(CUmodule module) const;
  std::mutex poll_mutex_;  // one poller at a time (Note [Sanitizer calls outside our lock])
  // Note [Decoding reuses its buffers], Note [Decoded on a thread of its
  // own]: the scratches, each with one launch's read-back from its fetch to
  // its finish; at most decode_scratches of them, free ones in free_scratches_.
  static constexpr std::size_t decode_scratches = 4;
  precise::decode_scratch* take_scratch();
  void give_back_scratch(precise::decode_scratch* s);
  std::mutex scratch_mutex_;
  std::condition_variable scratch_freed_;
  std::vector<std::unique_ptr<precise::decode_scratch>> scratches_;
  std::vector<precise::decode_scratch*> free_scratches_;
  bool decode_thread_ = false;
  std::function<void()> decode_hook_;  // tests only
  failure_callback failure_callback_;
  std::uint32_t estimate_headroom_ = default_estimate_headroom;
  std::mutex patch_mutex_;  // (un)patching; guards contexts_with_patches_
  std::map<CUmodule, std::uint32_t> handed_out_;  // tables given, launch not yet in flight
  // By context and its generation: a context made again at a destroyed
  // one's handle has no patches yet (Note [What a destroyed context took
  // with it]).
  std::set<std::pair<CUcontext, std::uint64_t>> contexts_with_patches_;
  std::set<CUmodule> patched_;
  std::atomic<std::size_t> patched_count_{0};  // patched_.size(), read without mutex_
  std::map<CUfunction, std::uint32_t> slots_hint_;
  // By context, its generation and (main, spill) slots (Note [What a
  // destroyed context took with it]).
  std::map<std::tuple<CUcontext, std::uint64_t, std::uint32_t, std::uint32_t>, std::vector<table>>
      free_tables_;
  // By context and its generation (Note [What a destroyed context took
  // with it]).
  std::map<std::pair<CUcontext, std::uint64_t>, std::vector<CUevent>> free_events_;
  struct private_stream_of {
    std::uint64_t generation = 0;  // its context's (context_generations)
    Sanitizer_StreamHandle handle = nullptr;
  };
  std::map<CUcontext, private_stream_of> private_streams_;  // poll_mutex_
  std::deque<precise::table_view> views_;  // host sources of the tables' views
  std::deque<launch_state> in_flight_;
  // Abandoned (Note [Launches in flight when the program is stopped]): their
  // kernels may still write into their tables; freed with the tracker only.
  std::deque<launch_state> abandoned_;
  std::atomic<bool> hurried_{false};
  std::map<std::thread::id, graph_launch_state> graph_launches_;
  std::map<CUfunction, function_use> function_uses_;
  // The (exec, node) pairs given per-launch data, which they keep (Note [A
  // graph node keeps its per-launch data]). Erased when the exec is
  // destroyed.
  std::set<std::pair<std::uintptr_t, std::uintptr_t>> nodes_with_launch_data_;
  // Functions whose data we set to null and have not set since.
  std::set<CUfunction> null_function_data_;
  std::size_t in_flight_bytes_ = 0;
  std::atomic<std::size_t> in_flight_count_{0};
  launch_id last_id_ = 0;
  tracker_stats stats_;
  // Last: destroyed (its thread joined) before what its jobs use.
  ordered_worker decoder_;
};

}  // namespace streamsan::sanitizer_api
