// The CUDA semantics the injection library models: it turns what a CUDA call
// did (decoded from the CUPTI callback by cupti_subscriber.cpp) into access-log
// records with our own ids, and keeps the handle tables, the allocation map
// and the kernel cache that this needs.
//
// Thread-safe: one mutex serializes the model, so that a handle created on
// one thread is known before another thread uses it, and the log order is the
// order in which calls completed.
//
// Note [Threads end in the log]
// A host thread that recorded through the model logs thread_exit when it
// ends, so that the engine can retire its clock slot and its per-thread
// default streams, and the model forgets the thread's per-thread default
// streams: memory stays bounded by the threads alive, in thread pools that
// come and go. The hook is a pthread key set at the thread's first record;
// key destructors run after every thread_local destructor of the thread
// (which may still call CUDA: a per-thread handle released at thread exit),
// and never for the main thread when the process exits, which keeps
// recording from static destructors and the report's atexit handler. A
// record from a later key destructor (another library's) comes as from a
// new thread, which logs its own thread_exit in the next round.
//
// Note [No driver calls under the model's lock]
// The model asks the driver (driver_queries) for the current device, for
// streams, kernels, graphs and untracked memory it did not see made. The
// driver may hold locks of its own while it runs a callback (a context
// destroy, a module unload, a call of another thread) that needs the model:
// asking the driver with the model's lock held is a lock-order inversion
// waiting to happen. So no query runs under the lock: what a call needs is
// asked before the lock is taken where the call's arguments tell (the device
// of a default stream, the graph, host function names), and a table miss
// (an unknown stream, an uncached kernel, untracked memory) lets go of the
// lock, asks and takes it again. Helpers that may let go (resolve_stream,
// resolve_range, kernel_info_for) run before an operation reads or changes
// anything else, or (kernel_info_for) last, and nothing points into the
// model's tables across them; an id they returned can only have gone stale
// meanwhile if another thread destroyed its object during this very call,
// a race in the program.
//
// Note [Kernel handles die with their module]
// A CUfunction or CUkernel may be handed out again once its module or
// library is unloaded. The resource callbacks that say so run inside the
// driver, so modules_unloaded() takes no lock: it counts the unload, and the
// next call that needs a kernel description drops the cache first. A
// description asked while an unload happened serves its own call only.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inject/model/access_inference.h"
#include "inject/model/allocation_map.h"
#include "inject/model/concurrency_watch.h"
#include "inject/model/driver_queries.h"
#include "inject/model/handle_table.h"
#include "inject/model/host_function_listener.h"
#include "inject/model/recent_pointers.h"
#include "inject/model/flat_id_map.h"
#include "inject/precise/footprint_decode.h"
#include "inject/precise/footprint_resolver.h"
#include "sanitizer/log/recorder.h"

namespace streamsan::injection {

// Where a call came from: the application's frames, innermost first.
struct call_site {
  std::span<const std::uint64_t> frames;
};

// A stream argument as the API passed it. Handle 0 names the legacy default
// stream, or the per-thread one in the _ptsz/_ptds variants (and in programs
// compiled with --default-stream per-thread, which call those variants).
struct stream_arg {
  std::uintptr_t handle = 0;
  bool per_thread_default = false;
};

inline constexpr std::uintptr_t legacy_stream_handle = 0x1;      // cudaStreamLegacy
inline constexpr std::uintptr_t per_thread_stream_handle = 0x2;  // cudaStreamPerThread

// An annotation's byte range (see include/streamsan/annotate.h), or an
// operator's tensor span: inferred where it holds bytes the tensor does not
// (Note [A span flagged as a hull] in inject/session/torch_entry.cpp).
struct annotated_range {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  access_mode mode = access_mode::read_write;
  access_origin origin = access_origin::exact;
};

// How an operator names the new tensors it returns (op_began; Note [An
// operator's outputs are its blocks] in cuda_model_ops.cpp).
enum class op_outputs : std::uint8_t {
  none,          // it returns none (in-place, out=, a view)
  named_at_end,  // op_ended() names them: its launches wait for it
  blocks,        // the caching allocator's blocks handed out inside it
};

// How much the model keeps (for tests and benchmarks of its memory bound).
struct model_footprint {
  std::size_t stream_handles = 0;  // live + tombstones
  std::size_t event_handles = 0;
  std::size_t per_thread_streams = 0;
  std::size_t annotations = 0;
  std::size_t live_allocations = 0;
  std::size_t freed_allocations = 0;
};

// Note [Caching allocator blocks]: what became of the blocks reported.
struct block_counters {
  std::uint64_t allocated = 0;
  std::uint64_t freed = 0;
  std::uint64_t outside_segments = 0;  // in no allocation we saw: left out
  std::uint64_t unknown_frees = 0;     // allocated before we were told: ignored
};

// "API (graph not readable: WHY)", the unmodelled call of a graph the
// driver would not describe (WHY: driver_queries::graph_read_failure()).
std::string unreadable(std::string_view api, const std::string& why);

class cuda_model {
 public:
  cuda_model(recorder& rec, driver_queries& driver);
  // Threads that outlive the model no longer report their end to it; none
  // may be using it.
  ~cuda_model();
  cuda_model(const cuda_model&) = delete;
  cuda_model& operator=(const cuda_model&) = delete;

  // ---- streams ----
  void stream_created(const call_site& at, std::uintptr_t handle, unsigned flags,
                      std::int32_t priority);
  void stream_destroyed(const call_site& at, std::uintptr_t handle);
  void stream_synchronized(const call_site& at, stream_arg s);
  void stream_queried(const call_site& at, stream_arg s, bool complete);
  void device_synchronized(const call_site& at);
  // cudaDeviceReset (the current device) or cuDevicePrimaryCtxReset
  // (`device`) returned: Note [Device reset].
  void device_reset(const call_site& at, std::optional<std::int32_t> device = std::nullopt);

  // ---- events ----
  void event_created(const call_site& at, std::uintptr_t handle, unsigned cuda_flags);
  void event_destroyed(const call_site& at, std::uintptr_t handle);
  void event_recorded(const call_site& at, std::uintptr_t event, stream_arg s);
  void stream_waited_event(const call_site& at, stream_arg s, std::uintptr_t event);
  void event_synchronized(const call_site& at, std::uintptr_t event);
  void event_queried(const call_site& at, std::uintptr_t event, bool complete);

  // ---- memory ----
  void allocated(const call_site& at, std::uint64_t address, std::uint64_t size, memory_kind kind,
                 std::optional<stream_arg> stream = std::nullopt);
  // Unknown addresses (not allocated through a call we saw) are ignored.
  void freed(const call_site& at, std::uint64_t address, free_mode mode,
             std::optional<stream_arg> stream = std::nullopt);
  // Note [Caching allocator blocks] (cuda_model_blocks.cpp): a caching
  // allocator handed out `size` bytes at `address` of `device`, inside a
  // segment, for stream `s`; and took the block at `address` back into its
  // pool.
  void block_allocated(const call_site& at, std::uint64_t address, std::uint64_t size,
                       std::int32_t device, stream_arg s);
  void block_freed(const call_site& at, std::uint64_t address);
  block_counters block_statistics() const;
  // Note [Blocks unseen while the subscription is dropped]
  // (cuda_model_blocks.cpp): a benchmark's "off" block.
  void set_blocks_unseen(bool unseen) noexcept {
    blocks_unseen_.store(unseen, std::memory_order_relaxed);
  }
  bool blocks_unseen() const noexcept { return blocks_unseen_.load(std::memory_order_relaxed); }
  void copied(const call_site& at, stream_arg s, const memory_region& dst,
              const memory_region& src, bool async);
  void memset(const call_site& at, stream_arg s, const memory_region& dst, bool async);

  // ---- work ----
  // `kernel` is a CUfunction or CUkernel; 0 when only `fallback_name` is
  // known (then no accesses can be inferred). `cooperative`: all its blocks
  // are resident at once (a cooperative launch).
  void kernel_launched(const call_site& at, stream_arg s, std::uintptr_t kernel,
                       const kernel_arguments& args, std::string_view fallback_name = {},
                       bool cooperative = false);
  void host_function_launched(const call_site& at, stream_arg s, std::uintptr_t fn);
  // Around the call that enqueues a host function (host_function_listener.h).
  void host_function_entering(stream_arg s);
  void host_function_returned(bool succeeded);
  // Note [A host function that ran orders the host] (cuda_model.cpp): on
  // the driver's thread, when the library's marker before a host function
  // runs; `place` was recorded where the marker was enqueued.
  void host_function_reached(event_id place) noexcept;
  // Not owned; nullptr for none. Set before callbacks start.
  void set_host_function_listener(host_function_listener* listener) noexcept {
    host_functions_ = listener;
  }

  // ---- graphs ----
  void capture_began(const call_site& at, stream_arg s);
  void capture_ended(const call_site& at, stream_arg s, std::uintptr_t graph);
  // Whether any stream is capturing now (no lock: the measuring source asks
  // at every launch; Note [Nothing of ours while a stream captures]).
  bool any_capture_active() const noexcept {
    return captures_active_.load(std::memory_order_acquire) != 0;
  }
  // Whether any two pieces of work can run unordered yet (no lock: asked at
  // every launch; Note [First launches are measured once work can overlap]).
  bool work_may_overlap() const noexcept { return concurrency_.overlap_possible(); }
  void graph_destroyed(std::uintptr_t graph);
  // cudaGraphAdd*Node returned `node` of `graph` (Note [Where graph nodes
  // were made]).
  void graph_node_added(const call_site& at, std::uintptr_t node, std::uintptr_t graph);
  // A call that took stream `s` returned successfully while some stream
  // captures: if `s` captures, the node(s) the call added get its stack.
  void captured_call_returned(const call_site& at, stream_arg s);
  void graph_instantiated(const call_site& at, std::uintptr_t exec, std::uintptr_t graph);
  void graph_exec_destroyed(std::uintptr_t exec);
  void graph_launched(const call_site& at, std::uintptr_t exec, stream_arg s);

  // ---- conditional nodes and edits of instantiated graphs ----
  // (cuda_model_graph_edits.cpp)
  // cudaGraphAddNode made conditional node `node` of `graph`, whose body
  // graphs are `bodies` (Note [Conditional nodes]).
  void conditional_node_added(const call_site& at, std::uintptr_t node, std::uintptr_t graph,
                              conditional_kind kind, std::span<const std::uintptr_t> bodies);
  // Note [Editing an instantiated graph]. `api` names the call in what is
  // listed as unmodelled when the exec or the node is unknown.
  // cudaGraphExecUpdate succeeded: `exec` now runs what `graph` describes.
  void graph_exec_updated(const call_site& at, std::uintptr_t exec, std::uintptr_t graph,
                          std::string_view api);
  // cudaGraphExec*NodeSetParams succeeded: `node` of `exec` now does what
  // `params` says (a kernel, memcpy, memset or host node; kernel arguments
  // are read during the call).
  void graph_exec_node_set(const call_site& at, std::uintptr_t exec, std::uintptr_t node,
                           const raw_graph_node& params, std::string_view api);
  // cudaGraphNodeSetEnabled succeeded.
  void graph_exec_node_enabled(const call_site& at, std::uintptr_t exec, std::uintptr_t node,
                               bool enabled, std::string_view api);
  // cudaGraphExecChildGraphNodeSetParams succeeded: the child graph node
  // `node` of `exec` now runs the nodes of `child` (Note [Child graph edits]).
  void graph_exec_child_set(const call_site& at, std::uintptr_t exec, std::uintptr_t node,
                            std::uintptr_t child, std::string_view api);

  // ---- CUDA arrays (cuda_model_arrays.cpp, Note [CUDA arrays]) ----
  // `bytes`: 0 when the handler could not size it (then listed under `api`).
  void array_created(const call_site& at, std::uintptr_t array, std::uint64_t bytes,
                     std::string_view api);
  void array_destroyed(const call_site& at, std::uintptr_t array);
  // The whole array as a region; address 0 (untracked) for an unknown one.
  // A level of a mipmapped array is the level's part of its allocation.
  memory_region array_region(std::uintptr_t array);
  // Note [Mipmapped arrays]: cudaMallocMipmappedArray / cuMipmappedArrayCreate
  // made `mipmap`, whose level i has `level_bytes[i]` bytes (no levels, or
  // a level of 0 bytes: not sized, listed under `api`).
  void mipmapped_array_created(const call_site& at, std::uintptr_t mipmap,
                               std::span<const std::uint64_t> level_bytes, std::string_view api);
  void mipmapped_array_destroyed(const call_site& at, std::uintptr_t mipmap);
  // cudaGetMipmappedArrayLevel / cuMipmappedArrayGetLevel: `array` is level
  // `level` of `mipmap`.
  void mipmap_level_taken(std::uintptr_t array, std::uintptr_t mipmap, std::uint32_t level);
  // All levels of the mipmapped array as a region; address 0 when unknown.
  memory_region mipmapped_array_region(std::uintptr_t mipmap);

  // ---- texture and surface objects (cuda_model_textures.cpp) ----
  // Note [Texture and surface objects]: `object` views `resource` (an
  // array's region, or a linear or pitched range of device memory); a kernel
  // launched with it accesses the resource in `mode` (read for a texture,
  // read-write for a surface). An unknown resource (size 0) is not kept.
  void texture_object_created(std::uint64_t object, const memory_region& resource,
                              access_mode mode);
  void texture_object_destroyed(std::uint64_t object);

  // ---- stream memory operations (cuda_model_stream_memops.cpp) ----
  // Note [Stream memory operations]: cuStreamWriteValue32/64 writes `size`
  // bytes at `address` on `s` and, unless `fenced` is false
  // (CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER), releases the stream's earlier
  // work through the word; cuStreamWaitValue32/64 acquires the last release
  // through it.
  void stream_value_written(const call_site& at, stream_arg s, std::uint64_t address,
                            std::uint32_t size, bool fenced, std::string_view api);
  void stream_value_waited(const call_site& at, stream_arg s, std::uint64_t address,
                           std::uint32_t size, std::string_view api);

  // ---- virtual memory management and IPC (cuda_model_vmm.cpp) ----
  // Note [Virtual memory management]. cuMemCreate made physical memory
  // `handle`: device memory of `device` (nullopt: the current device), or
  // pinned host memory.
  void physical_created(const call_site& at, std::uint64_t handle, std::uint64_t size,
                        memory_kind kind, std::optional<std::int32_t> device);
  // cuMemRetainAllocationHandle: `handle` is one more reference to the
  // physical memory mapped at `address`.
  void physical_retained(const call_site& at, std::uint64_t handle, std::uint64_t address);
  // cuMemRelease: one reference less.
  void physical_released(const call_site& at, std::uint64_t handle);
  // cuMemMap: `size` bytes of `handle`'s memory from `offset` on, at `address`.
  void mapped(const call_site& at, std::uint64_t address, std::uint64_t size,
              std::uint64_t offset, std::uint64_t handle);
  // cuMemUnmap, cuMemAddressFree: the mappings inside the range end.
  void unmapped(const call_site& at, std::uint64_t address, std::uint64_t size);
  // Note [IPC memory handles]: cudaIpcOpenMemHandle (`api`, for what is
  // listed when the driver gives no extent) returned `address`;
  // cudaIpcCloseMemHandle(address).
  void ipc_memory_opened(const call_site& at, std::uint64_t address, std::string_view api);
  void ipc_memory_closed(const call_site& at, std::uint64_t address);
  // Note [IPC events]: cudaIpcOpenEventHandle returned `handle`.
  void ipc_event_opened(const call_site& at, std::uintptr_t handle);

  // ---- external semaphores (cuda_model_semaphores.cpp) ----
  // Note [External semaphores]: cudaSignalExternalSemaphoresAsync and
  // cudaWaitExternalSemaphoresAsync (any semaphores, any values) on `s`.
  void semaphores_signalled(const call_site& at, stream_arg s);
  void semaphores_waited(const call_site& at, stream_arg s);

  // ---- NVTX ----
  void range_pushed(const call_site& at, std::string_view message);
  void range_popped(const call_site& at);
  void marked(const call_site& at, std::string_view message);

  // ---- annotations (include/streamsan/annotate.h) ----
  // The next kernel launch (or host function) on `s` accesses exactly these
  // ranges, instead of what inference would find.
  void annotate_next_launch(stream_arg s, std::span<const annotated_range> ranges);
  void host_accessed(const call_site& at, std::span<const annotated_range> ranges,
                     std::string_view label);

  // ---- framework operators (Note [Operators narrow kernel footprints]) ----
  // The calling thread runs an operator (an ATen op) whose tensor arguments
  // are `inputs`, each read or written as the op's schema says. Kernels it
  // launches until op_ended() take these spans instead of their inferred
  // footprints. Operators nest (the innermost one's spans are added to the
  // outer ones'). `outputs` says how the operator's new tensors are named
  // (Note [An operator's outputs are its blocks] in cuda_model_ops.cpp).
  void op_began(std::span<const annotated_range> inputs, op_outputs outputs);
  // The operator returned `outputs` (fresh tensors it wrote; none when its
  // blocks named them). Launches whose pointers were not in any input span
  // wait for these (Note [Measured footprints arrive late]); pointers in no
  // span keep their inferred footprint.
  void op_ended(std::span<const annotated_range> outputs);

  // A frame the program's runtime knows and the unwinder does not (a Python
  // frame): reports print `address` as this.
  void symbol_defined(std::uint64_t address, std::string_view function, std::string_view file,
                      std::uint32_t line, std::string_view module);

  // A call the model does not handle; counted and listed at exit.
  void unmodelled(const call_site& at, std::string_view api);
  // Kernel handles may be recycled once their module is unloaded. Takes no
  // lock: Note [Kernel handles die with their module].
  void modules_unloaded();

  // The calling thread ends (Note [Threads end in the log]); its thread-exit
  // hook calls this, tests may too.
  void thread_exited();

  std::size_t live_allocations() const;
  model_footprint footprint() const;

  // ---- exact footprints (cuda_model_measurement.cpp) ----
  // Note [Measured footprints arrive late]: the records of measured
  // launches wait in `resolver` (the recorder's sink in front of the engine)
  // until measured_launch_done(). Without a resolver nothing is measured.
  void set_footprint_resolver(precise::footprint_resolver* resolver) noexcept;
  // The next kernel_launched() on the calling thread is measured launch
  // `id` (a launch_tracker id); cleared by that launch or by clear_...().
  void expect_measured_launch(std::uint64_t id) noexcept;
  void clear_expected_measured_launch() noexcept;
  // A measured launch's footprint came back: its record takes the measured
  // accesses, or keeps its inferred ones when the footprint is incomplete,
  // and its kernel learns what its pointer words do (Note [Learned access
  // modes]). An unknown id (the launch call failed) is ignored.
  void measured_launch_done(std::uint64_t id, const precise::decoded_footprint& decoded);
  // Note [Measuring graph kernel nodes]: the next graph_launched() on the
  // calling thread measured these kernel nodes (a launch_tracker id and the
  // node's CUgraphNode each); the span must stay valid until that call or
  // clear_...(). Cleared by that launch.
  struct measured_graph_node {
    std::uint64_t id = 0;
    std::uintptr_t node = 0;
  };
  void expect_measured_graph_launch(std::span<const measured_graph_node> nodes) noexcept;
  void clear_expected_measured_graph_launch() noexcept;
  // Slots (pages x access kinds) a measured launch of `kernel` with `args`
  // may need: what its inferred footprint spans; 0 when unknown.
  std::uint32_t estimate_footprint_slots(std::uintptr_t kernel, const kernel_arguments& args);
  // Note [First launches are measured once work can overlap]: asked while
  // no work can overlap, whether a launch of `kernel` with `args` on `s`
  // may race all the same: `s`, first seen here (made out of sight), lets
  // work overlap, or a pointer word of `args` points into memory the host
  // can access (pinned, pageable or managed). Resolves `s` (its record
  // carries no stack).
  bool launch_may_race(stream_arg s, std::uintptr_t kernel, const kernel_arguments& args);
  // The measured intervals as accesses of the allocations that held them at
  // `epoch` (Note [Looking up the past]); memory streamsan does not track is
  // left out.
  // With `starts`, also the address each access begins at.
  static std::vector<access> measured_accesses(const precise::decoded_footprint& decoded,
                                               const allocation_map& allocations,
                                               std::uint64_t epoch,
                                               std::vector<std::uint64_t>* starts = nullptr);

 private:
  struct kernel_info {
    string_id name{};
    std::vector<param_plan> plans;
    learned_modes learned;  // Note [Learned access modes]
  };
  // A measured launch whose footprint has not come back.
  struct pending_measurement {
    precise::footprint_resolver::token token = 0;
    std::uintptr_t kernel = 0;
    std::vector<pointer_word> words;
    std::uint64_t epoch = 0;
    // Through texture and surface objects: no measurement sees them, so a
    // measured footprint keeps them (Note [Texture and surface objects]).
    std::vector<access> unmeasurable;
    // A graph kernel node's: the graph launch (a key of pending_graphs_)
    // and the node's index in the graph logged for it; 0 for a launch.
    std::uint64_t graph_launch = 0;
    std::uint32_t node = 0;
    // Note [Measured footprints of an operator's launches]: a launch inside
    // an operator. `op_accesses`: its accesses once known (at the launch, or
    // when the operator ended), whose inferred ones the measurement
    // replaces; `measured`: the measurement when it came back before them
    // (nullopt inside: incomplete).
    bool in_operator = false;
    std::optional<std::vector<access>> op_accesses;
    std::optional<std::optional<std::vector<access>>> measured;
  };
  // Note [Measuring graph kernel nodes]: a graph logged again for a
  // measured launch, waiting for its nodes' footprints.
  struct pending_graph {
    graph_id exec{};  // whose nodes are measured
    precise::footprint_resolver::token token = 0;
    std::size_t remaining = 0;
    precise::footprint_resolver::node_accesses measured;
  };
  std::unordered_map<std::uint64_t, pending_graph> pending_graphs_;
  std::uint64_t last_graph_launch_ = 0;
  // Whether any exec's measured_logged was ever set: graph launches look
  // no further while none was.
  bool any_graph_measured_logged_ = false;
  static std::span<const measured_graph_node> take_expected_measured_graph_launch() noexcept;
  // At kernel_launched(): registers the launch the calling thread expects to
  // be measured, before its record is emitted.
  // `unmeasurable`: its accesses through texture and surface objects.
  void await_measurement_locked(std::uint64_t id, std::uintptr_t kernel,
                                const kernel_info* info, const kernel_arguments& args,
                                std::span<const access> unmeasurable);
  static std::uint64_t take_expected_measured_launch() noexcept;
  // The calling thread is inside op_began() .. op_ended().
  static bool in_operator() noexcept;
  // kernel_launched() inside an operator (cuda_model_ops.cpp): the accesses
  // in scratch_, or a placeholder there and the launch awaits op_ended(), or
  // its measurement `measurement` (0: none), or both (Note [Measured
  // footprints of an operator's launches]).
  void op_launch_accesses_locked(const kernel_info* info, const kernel_arguments& args,
                                 std::uintptr_t kernel, std::uint64_t measurement);
  // Note [Measured footprints of an operator's launches]: the operator of
  // measured launch `id` ended with `accesses` for it. True when the launch
  // is resolved with `accesses` now (narrowed by its measurement when that
  // came back first), false when measured_launch_done() resolves it.
  bool op_launch_settled_locked(std::uint64_t id, std::vector<access>& accesses);
  // The inferred accesses of `accesses` replaced by the measured accesses
  // inside them; the others (exact) kept.
  static void narrow_to_measured(std::vector<access>& accesses, std::span<const access> measured);
  // Adds the spans of `ranges` (memory streamsan tracks) to `into`.
  void add_op_spans_locked(std::span<const annotated_range> ranges,
                           std::vector<access>& into) const;
  // A block freed on the calling thread leaves its operators' spans.
  void op_block_freed_locked(alloc_id block);
  // Note [An operator's outputs are its blocks]
  void op_block_allocated_locked(alloc_id block, std::uint64_t size);
  using model_lock = std::unique_lock<std::mutex>;
  // A stream argument with the driver's answer it may need (the device of a
  // default stream), asked before the lock: Note [No driver calls under the
  // model's lock].
  struct stream_ref {
    std::uintptr_t handle = 0;  // 0 resolved to the legacy or per-thread handle
    std::int32_t device = 0;    // a default stream's
  };

  void emit(const call_site& at, const record_body& body);
  stream_ref prepare(stream_arg s);
  // These may let go of the lock and take it again (Note [No driver calls
  // under the model's lock]).
  // Note [Answers found at once, then a call]: the *_slow functions are
  // the full lookups.
  stream_id resolve_stream(model_lock& lock, const call_site& at, stream_ref s);
  stream_id resolve_stream_slow(model_lock& lock, const call_site& at, stream_ref s);
  byte_range resolve_range(model_lock& lock, const memory_region& r, memory_kind& kind);
  // Valid while the lock is held; `uncached` holds an answer that may not
  // be cached (Note [Kernel handles die with their module]).
  const kernel_info& kernel_info_for(model_lock& lock, std::uintptr_t kernel,
                                     kernel_info& uncached);
  const kernel_info& kernel_info_for_slow(model_lock& lock, std::uintptr_t kernel,
                                          kernel_info& uncached);
  void forget_unloaded_kernels_locked();
  std::optional<byte_range> tracked_range_locked(const memory_region& r, memory_kind& kind) const;
  // A stand-in stream is never given work: it stands for what other
  // processes or APIs order (Note [IPC events], Note [External semaphores]).
  enum class stream_role : std::uint8_t { program, stand_in };
  stream_id new_stream_locked(const call_site& at, std::int32_t device, stream_flavor flavor,
                              std::int32_t priority, stream_role role = stream_role::program);
  event_id resolve_event_locked(const call_site& at, std::uintptr_t handle);
  // The access `r` makes, clamped to its allocation; nullopt for memory
  // streamsan does not track. Annotations fold these per allocation, an
  // operator's spans keep them apart.
  std::optional<access> access_of_locked(const annotated_range& r) const;
  std::vector<access> resolve_annotation_locked(std::span<const annotated_range> ranges);
  bool take_annotation_locked(stream_id s, std::vector<access>& out) {
    return !annotations_.empty() && take_annotation_slow_locked(s, out);  // most: no hashing
  }
  bool take_annotation_slow_locked(stream_id s, std::vector<access>& out);

  recorder& rec_;
  driver_queries& driver_;
  mutable std::mutex mutex_;
  // Note [Threads end in the log]; thread_key_created_ false when the
  // process ran out of keys (threads are then never retired).
  pthread_key_t thread_key_{};
  bool thread_key_created_ = false;

  handle_table<stream_id> streams_;
  handle_table<event_id> events_;
  handle_table<graph_id> graphs_;       // CUgraph -> the graph a capture made
  handle_table<graph_id> graph_execs_;  // CUgraphExec -> id used by graph_launch
  // Note [CUDA arrays], Note [Mipmapped arrays]: CUarray and
  // CUmipmappedArray -> a view (an id of the model's own), and what each
  // view is: its made-up range, whether it owns the allocation there (an
  // array, a mipmapped array) or is a part of one (a level), and a
  // mipmapped array's levels.
  enum class array_view : std::uint32_t {};
  struct array_block {
    memory_region region;
    bool owns = true;
    std::vector<memory_region> levels;         // a mipmapped array's
    std::vector<std::uintptr_t> level_arrays;  // the level handles taken from it
  };
  handle_table<array_view> arrays_;
  handle_table<array_view> mipmaps_;
  std::unordered_map<std::uint32_t, array_block> array_blocks_;  // by raw(array_view)
  std::uint32_t next_array_view_ = 0;
  std::uint64_t next_array_address_ = 0;
  // A fresh made-up range of `bytes` (Note [CUDA arrays]), allocated; its
  // view, nullopt when the allocation did not take.
  std::optional<array_view> new_array_block(const call_site& at, std::uint64_t bytes);
  memory_region view_region_locked(const handle_table<array_view>& table,
                                   std::uintptr_t handle) const;
  // Note [Texture and surface objects]: the objects' own ids and what each
  // live one views (a launch looks at its words only while there is one).
  enum class texture_object : std::uint32_t {};
  struct texture_view {
    memory_region resource;
    access_mode mode = access_mode::read;
  };
  handle_table<texture_object> texture_objects_;
  std::unordered_map<std::uint32_t, texture_view> texture_views_;  // by raw(texture_object)
  std::uint32_t next_texture_object_ = 0;
  std::vector<object_word> object_scratch_;
  std::vector<access> object_accesses_;
  // The accesses of a launch through the objects its words carry, into
  // object_accesses_ (cleared first).
  void object_accesses_locked(const kernel_info* info, const kernel_arguments& args);
  std::map<std::int32_t, stream_id> legacy_streams_;  // by device
  concurrency_watch concurrency_;  // changed under mutex_, read without it
  std::map<std::pair<std::uint32_t, std::int32_t>, stream_id> per_thread_streams_;
  std::unordered_map<std::uint32_t, graph_id> capturing_;  // raw(stream_id) -> graph
  std::atomic<std::size_t> captures_active_{0};
  struct node_site {
    std::uintptr_t graph = 0;
    stack_id stack{};
  };
  std::unordered_map<std::uintptr_t, node_site> node_sites_;  // CUgraphNode -> its call
  // raw(stream_id) -> the CUgraph its capture builds, once a frontier named it.
  std::unordered_map<std::uint32_t, std::uintptr_t> capture_graphs_;
  // captures_active_ = capturing_.size(), read without the lock.
  void capturing_changed() noexcept {
    captures_active_.store(capturing_.size(), std::memory_order_release);
  }
  // Note [Conditional nodes]: CUgraphNode -> its graph and bodies.
  struct conditional_site {
    std::uintptr_t graph = 0;
    conditional_kind kind = conditional_kind::if_then;
    std::vector<std::uintptr_t> bodies;
  };
  std::unordered_map<std::uintptr_t, conditional_site> conditionals_;
  // Note [Editing an instantiated graph]: what each live exec's last
  // graph_instantiate said, by raw(graph_id).
  struct exec_node {
    graph_node node;  // node.accesses is set from `accesses` when emitted
    std::vector<access> accesses;
    std::uintptr_t handle = 0;     // the CUgraphNode it was instantiated from
    std::uintptr_t updated = 0;    // the node of the graph of the last update
    std::uintptr_t event = 0;      // Note [Event nodes]: event record / wait nodes' CUevent
    std::uintptr_t kernel = 0;     // a kernel node's CUfunction or CUkernel
    std::vector<pointer_word> words;  // a kernel node's, as described
    bool enabled = true;
    // Note [Earlier measurements of graph nodes]: its last measured
    // accesses (origin: inferred) and the address each began at; cleared
    // when the node is edited.
    std::vector<access> earlier;
    std::vector<std::uint64_t> earlier_starts;
  };
  struct exec_graph {
    std::vector<exec_node> nodes;
    std::vector<graph_edge> edges;
    // Note [Measuring graph kernel nodes]: the last graph_instantiate of it
    // awaited measured nodes; the next unmeasured launch logs it again.
    bool measured_logged = false;
    // Note [Event nodes]: the enabled event nodes, so that a launch of a
    // graph without any looks at no node.
    std::vector<std::uint32_t> event_nodes;
  };
  std::unordered_map<std::uint32_t, exec_graph> exec_graphs_;
  // At graph_launched(): logs the exec's graph again, awaiting the measured
  // nodes; false (nothing logged) when none of them is a node of it.
  bool await_graph_measurement_locked(const call_site& at, graph_id id, exec_graph& g,
                                      std::span<const measured_graph_node> nodes);
  // Note [Earlier measurements of graph nodes]
  void remember_measured_node_locked(graph_id exec, std::uint32_t node,
                                     std::span<const access> accesses,
                                     std::span<const std::uint64_t> starts);
  // The accesses a node is logged with: its earlier measurement while every
  // allocation of it is still the one measured, else `n.accesses`.
  std::span<const access> logged_accesses_locked(const exec_node& n) const;
  // Whether `address` lies in the live allocation `id` (not in one handed
  // out there since).
  bool still_allocated_locked(std::uint64_t address, alloc_id id) const;
  // Note [Graph allocations] (cuda_model_graph_memory.cpp): what each live
  // exec's memory nodes allocate and free, by raw(graph_id), to map the
  // addresses at each launch.
  struct graph_allocation {
    alloc_id id{};
    std::uint64_t base = 0;
    std::uint64_t size = 0;
    std::int32_t device = 0;
    bool freed_inside = false;  // the graph's own free node frees it
  };
  struct graph_memory {
    std::vector<graph_allocation> made;  // those freed inside first
    std::vector<std::pair<std::uint64_t, alloc_id>> freed;  // made elsewhere, by base
    // Free nodes whose address named nothing at instantiation: looked up at
    // each launch (a graph instantiated before the one that allocates).
    std::vector<std::uint64_t> freed_by_address;
    bool empty() const noexcept {
      return made.empty() && freed.empty() && freed_by_address.empty();
    }
  };
  std::unordered_map<std::uint32_t, graph_memory> graph_memory_;
  // The allocation of each alloc node, by (CUgraph, CUgraphNode), while the
  // graph lives: instantiating the graph again names the same memory.
  std::map<std::pair<std::uintptr_t, std::uintptr_t>, graph_allocation> alloc_nodes_;
  // Before the graph's nodes are described: an allocation per alloc node
  // (logged, and live in the map while the nodes are described), and what
  // each free node frees. Returns each node's allocation (none for others).
  std::vector<alloc_id> bind_graph_memory_locked(const call_site& at, const raw_graph& g,
                                                 std::uintptr_t graph, graph_memory& memory);
  alloc_id alloc_node_allocation_locked(const call_site& at, const raw_graph_node& n,
                                        std::uintptr_t graph);
  // After: the nodes name their allocations, accesses to an address two of
  // the graph's allocations share name the one the node runs within, and
  // the allocations are unborn in the map until a launch.
  void finish_graph_memory_locked(const raw_graph& g, std::span<const alloc_id> node_memory,
                                  const graph_memory& memory, exec_graph& out);
  static void rename_shared_addresses(const raw_graph& g, std::span<const alloc_id> node_memory,
                                      const graph_memory& memory, exec_graph& out);
  // A launch on `stream` allocated and freed them: the addresses name them
  // accordingly, and what the free nodes free by address is freed.
  void launch_graph_memory_locked(const call_site& at, stream_id stream,
                                  const graph_memory& memory);
  // Whether the stream captures (asked of the driver, without the lock):
  // cudaMallocAsync / cudaFreeAsync then add a graph memory node.
  bool captures(const stream_ref& s);
  // The graph `graph` as nodes and edges of the log, conditional bodies
  // spliced in (no lock held: asks the driver).
  std::optional<raw_graph> read_graph(std::uintptr_t graph);
  // The names of its host nodes (no lock held: asks the driver).
  std::vector<string_id> host_names_of(const raw_graph& g);
  // These may let go of the lock (kernel_info_for, resolve_range).
  exec_graph describe_exec_locked(model_lock& lock, const call_site& at,
                                  const raw_graph& described, std::uintptr_t graph,
                                  std::span<const string_id> host_names);
  // `words`, when given: a kernel node's pointer words (Note [Measuring
  // graph kernel nodes]: what a measurement of the node teaches its kernel).
  void describe_node_locked(model_lock& lock, const raw_graph_node& n, string_id host_name,
                            graph_node& out, std::vector<access>& accesses,
                            std::vector<pointer_word>* words = nullptr);
  // The words still pointing into the allocations they pointed into when the
  // node was described; empty when any of them no longer does.
  std::vector<pointer_word> words_still_valid_locked(std::span<const pointer_word> words) const;
  // Also refreshes g.event_nodes.
  void emit_exec_locked(const call_site& at, graph_id id, exec_graph& g);
  // Note [Event nodes]: the waits (before the launch) or records (after it)
  // of the exec's enabled event nodes of kind `kind`.
  void emit_event_nodes_locked(const call_site& at, graph_id id, stream_id stream,
                               graph_node_kind kind);
  exec_node* find_exec_node_locked(const call_site& at, std::uintptr_t exec, std::uintptr_t node,
                                   std::string_view api, graph_id& id);
  // Note [Stream memory operations]: the event each written word releases
  // through, by (raw(alloc_id), offset), or (0, address) for untracked memory.
  std::map<std::pair<std::uint32_t, std::uint64_t>, event_id> value_events_;
  enum class memop : std::uint8_t { write, fenced_write, wait };
  void stream_memory_operation(const call_site& at, stream_arg s, std::uint64_t address,
                               std::uint32_t size, memop op, std::string_view api);
  // Note [Virtual memory management]: physical memory by raw(alloc_id) of
  // its root, the handles that name it, and the mappings by address.
  struct physical_memory {
    std::uint64_t size = 0;
    memory_kind kind = memory_kind::device;
    std::int32_t device = 0;
    std::uint32_t references = 0;  // handles not released
    std::uint32_t mappings = 0;
  };
  struct mapping {
    alloc_id block{};
    alloc_id root{};
    std::uint64_t size = 0;
  };
  std::unordered_map<std::uint32_t, physical_memory> physicals_;
  std::unordered_map<std::uint64_t, alloc_id> physical_handles_;  // handle -> root
  std::map<std::uint64_t, mapping> mappings_;                     // by address
  std::unordered_map<std::uint64_t, std::uint32_t> ipc_opens_;    // address -> references
  // Note [IPC events]: the stream, per device, that stands for the other
  // processes that record an interprocess event.
  std::map<std::int32_t, stream_id> other_process_streams_;
  // Note [External semaphores]: the stream that stands for the work outside
  // the process, the event it records after each signal, and the event
  // each signalling stream hands its work over with.
  std::optional<stream_id> outside_stream_;
  event_id outside_event_{};
  std::unordered_map<std::uint32_t, event_id> handoff_events_;  // raw(stream_id)
  void drop_handoff_event_locked(const call_site& at, stream_id stream);
  alloc_id new_physical_locked(const call_site& at, std::uint64_t handle, std::uint64_t size,
                               memory_kind kind, std::int32_t device);
  void drop_physical_reference_locked(const call_site& at, std::uint64_t handle);
  void free_physical_if_unused_locked(const call_site& at, alloc_id root);
  void end_mappings_locked(const call_site& at, std::uint64_t address, std::uint64_t size,
                           free_mode mode);
  void recorded_elsewhere_locked(const call_site& at, event_id event, std::int32_t device);
  std::unordered_map<std::uintptr_t, kernel_info> kernels_;
  // Note [Recent handles]: kernels_'s last hits; cleared with it.
  recent_pointers<kernel_info> recent_kernels_;
  std::atomic<std::uint64_t> modules_unloaded_{0};  // unloads counted, no lock
  std::uint64_t kernels_unloads_seen_ = 0;          // when kernels_ was last dropped
  std::unordered_map<std::uint32_t, std::vector<access>> annotations_;  // raw(stream_id)
  allocation_map allocations_;
  block_counters blocks_;
  std::atomic<bool> blocks_unseen_{false};  // no lock: a benchmark's switch
  // Note [Graphs name segments, not blocks]: each block's segment and
  // offset there, while the block lives (Note [Flat tables by id]).
  struct block_place {
    alloc_id segment{};
    std::uint64_t offset = 0;
  };
  flat_id_map<alloc_id, block_place> block_places_;
  void accesses_to_segments_locked(std::vector<access>& accesses) const;
  std::vector<access> scratch_;
  std::vector<pointer_word> word_scratch_;  // op_launch_accesses_locked's
  host_function_listener* host_functions_ = nullptr;
  // Note [A host function that ran orders the host]: what a marker the
  // driver runs after the model is gone finds.
  struct marker_link {
    std::mutex mutex;
    cuda_model* model = nullptr;
  };
  std::shared_ptr<marker_link> markers_ = std::make_shared<marker_link>();
  void mark_host_function_place(stream_arg s, std::uintptr_t handle);
  precise::footprint_resolver* resolver_ = nullptr;
  std::unordered_map<std::uint64_t, pending_measurement> pending_measurements_;
};

}  // namespace streamsan::injection
