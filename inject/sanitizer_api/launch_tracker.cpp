#include "inject/sanitizer_api/launch_tracker.h"

#include <dlfcn.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <thread>
#include <utility>

#include "sanitizer/log/elapsed.h"

namespace streamsan::sanitizer_api {
namespace {

// What LAUNCH_BEGIN set up, until the launching call returns.
struct thread_launch {
  bool began = false;
  bool ended = false;
  CUfunction function = nullptr;
  CUmodule module = nullptr;
  CUstream stream = nullptr;
  CUcontext ctx = nullptr;
  Sanitizer_StreamHandle hstream = nullptr;
  void* table_device = nullptr;
  precise::table_layout layout;
  std::uint64_t generation = 0;  // of ctx, when the table was had
};
thread_local thread_launch this_thread;

template <class F>
bool resolve(void* lib, const char* name, F& slot) {
  slot = reinterpret_cast<F>(dlsym(lib, name));
  return slot != nullptr;
}

// A launch whose table could not be read back or decoded: the model keeps
// its inferred footprint.
precise::decoded_footprint unmeasured() {
  precise::decoded_footprint d;
  d.complete = false;
  d.failed = true;
  return d;
}

// The driver context `ctx` is current for the scope.
class context_scope {
 public:
  context_scope(const tracker_driver& d, CUcontext ctx) : d_(d) {
    pushed_ = ctx != nullptr && d_.ctx_push(ctx) == CUDA_SUCCESS;
  }
  ~context_scope() {
    CUcontext ignored = nullptr;
    if (pushed_) d_.ctx_pop(&ignored);
  }
  context_scope(const context_scope&) = delete;
  context_scope& operator=(const context_scope&) = delete;

 private:
  const tracker_driver& d_;
  bool pushed_ = false;
};

}  // namespace

std::optional<tracker_driver> resolve_tracker_driver() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return std::nullopt;
  tracker_driver d;
  const bool ok = resolve(lib, "cuEventCreate", d.event_create) &&
                  resolve(lib, "cuEventRecord", d.event_record) &&
                  resolve(lib, "cuEventQuery", d.event_query) &&
                  resolve(lib, "cuEventSynchronize", d.event_synchronize) &&
                  resolve(lib, "cuEventDestroy_v2", d.event_destroy) &&
                  resolve(lib, "cuStreamCreate", d.stream_create) &&
                  resolve(lib, "cuCtxPushCurrent_v2", d.ctx_push) &&
                  resolve(lib, "cuCtxPopCurrent_v2", d.ctx_pop) &&
                  resolve(lib, "cuKernelGetFunction", d.kernel_get_function) &&
                  resolve(lib, "cuFuncGetModule", d.func_get_module) &&
                  resolve(lib, "cuFuncGetName", d.func_get_name) &&
                  resolve(lib, "cuCtxGetCurrent", d.ctx_get_current) &&
                  resolve(lib, "cuStreamIsCapturing", d.stream_is_capturing) &&
                  resolve(lib, "cuStreamQuery", d.stream_query) &&
                  resolve(lib, "cuMemHostRegister_v2", d.mem_host_register) &&
                  resolve(lib, "cuMemHostUnregister", d.mem_host_unregister);
  dlclose(lib);  // RTLD_NOLOAD took a reference; the driver stays loaded
  if (!ok) return std::nullopt;
  return d;
}

launch_tracker::launch_tracker(const sanitizer_library& lib, const tracker_driver& driver,
                               tracker_options options)
    : lib_(lib), driver_(driver), options_(options) {
  free_scratches_.reserve(decode_scratches);  // giving one back allocates nothing
}

launch_tracker::~launch_tracker() {
  // Note [What a destroyed context took with it]: nothing of a destroyed
  // context is freed.
  const auto free_table = [this](const table& t) {
    if (lib_.free && contexts_.current(t.ctx, t.generation)) lib_.free(t.ctx, t.device);
  };
  const auto destroy_event = [this](CUevent e, CUcontext ctx, std::uint64_t generation) {
    if (e != nullptr && driver_.event_destroy && contexts_.current(ctx, generation)) {
      driver_.event_destroy(e);
    }
  };
  for (const auto& [key, pool] : free_tables_) {
    for (const table& t : pool) free_table(t);
  }
  for (const auto* launches : {&in_flight_, &abandoned_}) {
    for (const launch_state& l : *launches) {  // never read back
      free_table(l.t);
      if (l.owns_event) destroy_event(l.done, l.t.ctx, l.t.generation);
    }
  }
  for (const auto& [thread, g] : graph_launches_) {
    for (const graph_node_table& n : g.nodes) free_table(n.t);
  }
  for (const auto& [key, events] : free_events_) {
    for (const CUevent e : events) destroy_event(e, key.first, key.second);
  }
}

extern "C" {
extern const unsigned char streamsan_footprint_patches[];
}

namespace {
// Polls, where std::timed_mutex would block with a time limit: gcc 12's
// ThreadSanitizer does not see pthread_mutex_clocklock take the lock and
// then reports its unlock as one of an unlocked mutex.
bool try_lock_within(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!lock.try_lock()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}
}  // namespace

// Patching runs under patch_mutex_, never under mutex_: sanitizerPatchModule
// and sanitizerUnpatchModule wait for launches in their callbacks, which may
// wait for mutex_ (Note [Sanitizer calls outside our lock]).
//
// Note [A module-loaded callback waits a bounded time]
// The driver runs the module-loaded callback under a lock of its own, and
// that callback patches the module, which takes patch_mutex_. A thread that
// holds patch_mutex_ calls sanitizerPatchModule or sanitizerUnpatchModule,
// which wait for the driver's lock: each thread waited for the other.
// UnifiedMemoryStreams (OpenMP threads, each with its own cuBLAS handle)
// hung about once in 30 runs in the default mode on an H200 (2026-11-29):
// its main thread unpatched a module at a launch while another thread's
// cuBLAS call loaded one. So the callback waits only a bounded time; when
// it runs out, the module stays unpatched and its first launch patches it
// (as for a module loaded while a stream captured), outside the driver's
// lock.
launch_tracker::patch_outcome launch_tracker::patch_module(
    CUcontext ctx, CUmodule module, std::string& why, std::optional<std::chrono::milliseconds> wait) {
  std::unique_lock patching(patch_mutex_, std::defer_lock);
  if (!wait) {
    patching.lock();
  } else if (!try_lock_within(patching, *wait)) {
    return patch_outcome::busy;
  }
  if (is_patched(module)) return patch_outcome::patched;
  // Note [What a destroyed context took with it]: its patch code too.
  const std::pair<CUcontext, std::uint64_t> with_patches{ctx, contexts_.of(ctx)};
  if (contexts_with_patches_.insert(with_patches).second) {
    if (const auto r = lib_.add_patches(streamsan_footprint_patches, ctx); r != SANITIZER_SUCCESS) {
      contexts_with_patches_.erase(with_patches);
      why = "loading streamsan's patch code: " + lib_.describe(r);
      return patch_outcome::refused;
    }
  }
  const std::pair<Sanitizer_InstructionId, const char*> patches[] = {
      {SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, options_.global_access_function},
      {SANITIZER_INSTRUCTION_MEMCPY_ASYNC, "streamsan_memcpy_async"},
      {SANITIZER_INSTRUCTION_BULK_COPY_GLOBAL_TO_SHARED, "streamsan_bulk_global_to_shared"},
      {SANITIZER_INSTRUCTION_BULK_COPY_SHARED_TO_GLOBAL, "streamsan_bulk_shared_to_global"},
      {SANITIZER_INSTRUCTION_BULK_REDUCTION_SHARED_TO_GLOBAL, "streamsan_bulk_reduction_to_global"},
  };
  for (const auto& [instruction, callback] : patches) {
    if (const auto r = lib_.patch_instructions(instruction, module, callback);
        r != SANITIZER_SUCCESS) {
      why = std::string("patching ") + callback + ": " + lib_.describe(r);
      return patch_outcome::refused;
    }
  }
  if (const auto r = lib_.patch_module(module); r != SANITIZER_SUCCESS) {
    why = "sanitizerPatchModule: " + lib_.describe(r);
    return patch_outcome::refused;
  }
  std::lock_guard lock(mutex_);
  patched_.insert(module);
  patched_count_.store(patched_.size(), std::memory_order_release);
  // Whether patching keeps a function's data is not known: set it again.
  null_function_data_.clear();
  ++stats_.modules_patched;
  return patch_outcome::patched;
}

bool launch_tracker::patched_set_holds(CUmodule module) const {
  std::lock_guard lock(mutex_);
  return patched_.count(module) != 0;
}

// A module with a table handed out, or a launch in flight, stays patched:
// unpatched code would leave its table empty. It leaves patched_ before the
// call, so no launch is handed a table meanwhile.
bool launch_tracker::unpatch_module(CUmodule module, std::string& why) {
  std::lock_guard patching(patch_mutex_);
  {
    std::lock_guard lock(mutex_);
    if (patched_.count(module) == 0) return true;
    if (const auto h = handed_out_.find(module); h != handed_out_.end() && h->second > 0) return false;
    for (const auto& l : in_flight_) {
      if (l.module == module) return false;
    }
    patched_.erase(module);
    patched_count_.store(patched_.size(), std::memory_order_release);
  }
  if (const auto r = lib_.unpatch_module(module); r != SANITIZER_SUCCESS) {
    why = "sanitizerUnpatchModule: " + lib_.describe(r);
    std::lock_guard lock(mutex_);
    patched_.insert(module);
    patched_count_.store(patched_.size(), std::memory_order_release);
    return false;
  }
  std::lock_guard lock(mutex_);
  ++stats_.modules_unpatched;
  return true;
}

std::vector<CUmodule> launch_tracker::patched_modules() const {
  std::lock_guard lock(mutex_);
  return {patched_.begin(), patched_.end()};
}

void launch_tracker::module_unloaded(CUmodule module) {
  std::lock_guard lock(mutex_);
  patched_.erase(module);
  patched_count_.store(patched_.size(), std::memory_order_release);
  // CUfunction handles of the module may be handed out again.
  slots_hint_.clear();
}

std::optional<launch_tracker::table> launch_tracker::acquire_locked(
    CUcontext ctx, const precise::table_layout& layout, Sanitizer_StreamHandle stream) {
  // Note [What a destroyed context took with it]: the context as it is now.
  const std::uint64_t generation = contexts_.of(ctx);
  auto& pool = free_tables_[{ctx, generation, layout.capacity, layout.spill_capacity}];
  if (!pool.empty()) {
    table t = pool.back();
    pool.pop_back();
    return t;
  }
  table t;
  t.layout = layout;
  t.ctx = ctx;
  t.generation = generation;
  if (lib_.alloc(ctx, &t.device, t.layout.bytes) != SANITIZER_SUCCESS) return std::nullopt;
  views_.push_back(precise::view_at(reinterpret_cast<std::uintptr_t>(t.device), t.layout));
  if (lib_.memcpy_to_device(t.device, &views_.back(), sizeof(precise::table_view), stream) !=
      SANITIZER_SUCCESS) {
    lib_.free(ctx, t.device);
    return std::nullopt;
  }
  return t;
}

void launch_tracker::release_locked(const table& t) {
  // Note [What a destroyed context took with it]
  if (!contexts_.current(t.ctx, t.generation)) return;
  free_tables_[{t.ctx, t.generation, t.layout.capacity, t.layout.spill_capacity}].push_back(t);
}

// Note [What a destroyed context took with it]
// A table's memory, an event and the patch code added to a context
// (sanitizerAddPatches) belong to the context they were made in, and a
// destroyed context takes them with it. Its handle may then name a
// new context (cudaDeviceReset and the next CUDA call give the primary
// context back, often at the same address): a pooled table handed to a
// launch there would have the patched code write into memory that is no
// longer the table's, and an event of the old context cannot be recorded
// on the new one's streams; and a module of the new context could not be
// patched without the patch code added to it again (H200: after
// cudaDeviceReset, "patching streamsan_global_access: One or more of the
// parameters is invalid", every kernel's footprint left inferred). So the
// contexts given patch code, and the free tables and events, are kept by
// context and generation (context_generations), dropped when their
// context is destroyed, and a table or event coming back from a launch of
// a destroyed context is dropped too, never freed: freeing it would use
// the destroyed context's handle. Events were also pooled across
// contexts: a launch on one device could take an event of another, whose
// record fails, and then waited for its kernel at the launch.
void launch_tracker::context_destroying(CUcontext ctx) {
  contexts_.destroyed(ctx);
  std::lock_guard lock(mutex_);
  std::erase_if(free_tables_, [ctx](const auto& entry) { return std::get<0>(entry.first) == ctx; });
  std::erase_if(free_events_, [ctx](const auto& entry) { return entry.first.first == ctx; });
}

// Note [Tables sized from measured launches]
// A kernel's first measured launch gets a table from the caller's estimate,
// every pointer argument's bytes to the end of its allocation, since
// nothing better is known. Its later launches were sized the same way, the
// estimate being larger than the hint its measurements left, and a table's
// read-back reads every bucket's summary: cuSolverRf's refactorization
// under --precise (H200, 2026-11-29) read back 615 GB for its 52,324
// launches, 11.7 MB a launch that wrote about 41 pages, 52 of its 58
// seconds. So once a kernel was measured its tables come from the hint
// (twice the pages of its largest launch so far, or four times a table it
// overflowed), with room for it to grow: a spill region of up to
// `estimate_headroom_` times the hint when the estimate allows, read back
// only by a launch that used it (Note [The room to grow is read only when
// used] in footprint_layout.h). A launch that outgrows even that (some 16
// to 32 times the pages of the kernel's largest launch before) overflows,
// keeps its inferred footprint (a possible race at most, where the
// estimate's table would have measured it) and leaves its kernel a hint four
// times larger (retire_locked).
// STREAMSAN_TABLE_HEADROOM sets the factor (1 to 64). It used to trade
// read-back for launches that outgrow their tables: cuSolverRf under
// --precise read back 41 GB at 16 and 14.3 GB at 4 (H200, 2026-11-29).
// Since the room is read back only by a launch that used it, the same run
// reads back 3.6 GB at 16 (H200, 2026-11-30); the factor now costs only
// the room's device memory and its clearing before each launch.
// Each region has a power of two of slots, from 16 to max_capacity (Note
// [The slot is the bucket]): few distinct sizes to pool, and a larger
// footprint overflows and is inferred.
precise::table_layout launch_tracker::layout_for_launch(std::uint32_t learned,
                                                        std::uint32_t slot_estimate) const {
  const auto region = [](std::uint64_t slots) {
    return precise::region_slots(
        static_cast<std::uint32_t>(std::clamp<std::uint64_t>(slots, 16, precise::max_capacity)));
  };
  if (learned == 0) {
    return precise::layout_for(region(slot_estimate != 0 ? slot_estimate : options_.initial_slots));
  }
  const std::uint32_t main = region(learned);
  const std::uint64_t room = std::uint64_t{learned} * estimate_headroom_;
  const std::uint32_t grown = region(std::min<std::uint64_t>(slot_estimate, room));
  return precise::layout_for(main, grown > main ? grown : 0);
}

std::optional<launch_tracker::table> launch_tracker::cleared_table_locked(
    const Sanitizer_LaunchData& launch, std::uint32_t slot_estimate) {
  const auto hint = slots_hint_.find(launch.function);
  const std::uint32_t learned = hint != slots_hint_.end() ? hint->second : 0;
  auto t = acquire_locked(launch.context, layout_for_launch(learned, slot_estimate),
                          launch.hStream);
  if (!t) {
    ++stats_.failed;
    return std::nullopt;
  }
  // Stream-ordered before the kernel: the slots and counters start empty.
  auto* base = static_cast<char*>(t->device);
  if (lib_.memset(base + t->layout.cleared_offset, 0,
                  t->layout.cleared_end - t->layout.cleared_offset,
                  launch.hStream) != SANITIZER_SUCCESS) {
    ++stats_.failed;
    release_locked(*t);
    return std::nullopt;
  }
  return t;
}

// Clears the thread's launch, keeping threads_with_tables_ its count.
void launch_tracker::forget_this_threads_launch() noexcept {
  thread_launch& me = this_thread;
  threads_with_tables_.changed(me.began, false);
  me = thread_launch{};
}

void launch_tracker::launch_begin(const Sanitizer_LaunchData& launch, bool measure,
                                  std::uint32_t slot_estimate) {
  forget_this_threads_launch();
  std::lock_guard lock(mutex_);
  const bool patched = patched_.count(launch.module) != 0;
  if (!measure || !patched) {
    // A patched module's launches that are not measured get no table.
    if (patched) null_launch_data_locked(launch);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  struct timed {
    tracker_stats& stats;
    std::chrono::steady_clock::time_point start;
    ~timed() { stats.setup_ns += nanoseconds_since(start); }
  } setup{stats_, start};
  auto t = cleared_table_locked(launch, slot_estimate);
  if (t && lib_.set_launch_callback_data(launch.hLaunch, launch.function, launch.hStream,
                                         t->device) != SANITIZER_SUCCESS) {
    ++stats_.failed;
    release_locked(*t);
    t.reset();
  }
  if (!t) {
    null_launch_data_locked(launch);
    return;
  }
  ++handed_out_[launch.module];
  threads_with_tables_.changed(false, true);
  this_thread = thread_launch{true,           false,          launch.function,
                              launch.module,  launch.stream,  launch.context,
                              launch.hStream, t->device,      t->layout,
                              t->generation};
}

// Patched code reads whatever data the launch carries: unless given a
// table, it must carry null, never a stale pointer. A graph node left
// without per-launch data got a wild one (illegal and misaligned addresses
// on an H200, 2026-11-28), so unmeasured nodes get null too.
void launch_tracker::null_launch_data_locked(const Sanitizer_LaunchData& launch) {
  lib_.set_launch_callback_data(launch.hLaunch, launch.function, launch.hStream, nullptr);
}

void launch_tracker::launch_end(const Sanitizer_LaunchData& launch) {
  if (this_thread.began && this_thread.function == launch.function) this_thread.ended = true;
}

// Note [Sanitizer calls outside our lock]
// The Sanitizer API holds a lock of its own while it runs a launch callback,
// and its copies take that lock exclusively. A thread in a launch callback
// may wait for mutex_ (launch_begin), so a thread holding mutex_ must never
// wait for the Sanitizer API's lock: no copy, no synchronize and no driver
// call (the driver's callbacks go through the Sanitizer API too) happens
// under mutex_ here. On the H100 a read-back under mutex_ deadlocked with a
// launch on another thread (api_tour's workers). Pollers are serialized by
// poll_mutex_ instead, which keeps footprints in launch order and guards
// the private streams.
// Note [A thread-local looked at only when it can hold something] (in
// sanitizer/log/threads_with_state.h): launched()'s slow path.
std::optional<launch_tracker::launch_id> launch_tracker::this_threads_launch() {
  thread_launch& me = this_thread;
  if (!me.ended) {
    // Every API call's exit comes here: the common case (no launch began)
    // leaves the state as it is, already clear.
    if (me.began) {  // handed a table, never launched
      {
        std::lock_guard lock(mutex_);
        --handed_out_[me.module];
        release_locked(table{me.table_device, me.layout, me.ctx, me.generation});
      }
      forget_this_threads_launch();
    }
    return std::nullopt;
  }
  const thread_launch l = std::exchange(me, thread_launch{});
  threads_with_tables_.changed(true, false);
  const CUevent done = event_after(l.ctx, l.generation, l.stream, l.hstream);
  std::lock_guard lock(mutex_);
  --handed_out_[l.module];
  launch_state s;
  s.t = table{l.table_device, l.layout, l.ctx, l.generation};
  s.function = l.function;
  s.module = l.module;
  s.stream = l.stream;
  s.ctx = l.ctx;
  s.done = done;
  enqueue_locked(s);
  return last_id_;
}

// Outside mutex_ (Note [Sanitizer calls outside our lock]).
CUevent launch_tracker::event_after(CUcontext ctx, std::uint64_t generation, CUstream stream,
                                    Sanitizer_StreamHandle hstream) {
  CUevent done = nullptr;
  {
    std::lock_guard lock(mutex_);
    // Note [What a destroyed context took with it]: the context's own.
    if (auto it = free_events_.find({ctx, generation}); it != free_events_.end() &&
                                                        !it->second.empty()) {
      done = it->second.back();
      it->second.pop_back();
    }
  }
  if (done == nullptr) done = new_event(ctx);
  if (done != nullptr && driver_.event_record(done, stream) == CUDA_SUCCESS) return done;
  // Without an event of our own, wait for the launch now (outside the
  // launch callbacks, this is allowed); done == nullptr means completed.
  if (done != nullptr) {
    std::lock_guard lock(mutex_);
    free_events_[{ctx, generation}].push_back(done);
  }
  lib_.stream_synchronize(hstream);
  std::lock_guard lock(mutex_);
  ++stats_.waits;
  return nullptr;
}

void launch_tracker::enqueue_locked(launch_state s) {
  s.id = ++last_id_;
  in_flight_bytes_ += s.t.layout.bytes;
  in_flight_.push_back(s);
  in_flight_count_.store(in_flight_.size(), std::memory_order_release);
}

// Note [Which graph nodes are measured]
// Per-launch callback data never reaches a graph node as a table of its
// own; per-function data (sanitizerSetCallbackData) does, and any
// per-launch data, even null, keeps a node out of it (docs/injection.md,
// the H200 probes of 2026-11-27 and -28). The function's data is bound once
// per graph launch, by the end of the call: set in one node's callback and
// again in a later one's, the later table got both nodes' writes and the
// earlier none. So a node is measured by setting its function's data to a
// table in its callback and back to null at the graph launch call's exit,
// while every other node of that function in the launch gets null
// per-launch data: at most one node per function and launch. Every node of
// a patched module that is not measured reads null (Note [Unmeasured graph
// nodes read null]). A graph launch in progress on another thread with a node of
// the function (counted in function_uses_) makes the table unusable:
// neither launch measures it, and one that set it first drops it at its
// exit. The tables go in flight at the call's exit, behind one event
// recorded on the launch's stream, after the whole graph: read back like
// launches'. A dropped table goes in flight too, unread: the node that had
// it may write into it until that event completes, so it returns to the
// pool only then.
//
// Note [A graph node keeps its per-launch data]
// Per-launch data given to a graph node stays with that node of the exec
// for its later launches: it then never reads its function's data again.
// On an H200 (2026-11-28, bench/precise/graph_repeat.cu, probe
// PROBE_GRAPH_FUNCDATA=turns) two nodes of one kernel taking turns (one
// measured through the function's data, the other given null per-launch
// data, swapped at every launch) gave the first node's footprint at the
// first launch and empty tables at the three after it; the nodes had
// written their halves. An empty table reads as "measured: touched
// nothing", which hid the race of graph_repeated_kernel_racy with
// --precise. So the tracker remembers every (exec, node) it gave
// per-launch data and never measures one of them: of the nodes of one
// kernel in an exec, the first one submitted at the first launch that
// measures the kernel is the one measured from then on; its siblings keep
// their inferred footprints (the model logs them so: Note [Earlier
// measurements of graph nodes] in inject/model/cuda_model_measurement.cpp).
// Per-launch data is no second channel either: a table given so to the
// second node stayed empty (PROBE_GRAPH_FUNCDATA=slot, docs/injection.md).
bool launch_tracker::graph_node_begin(const Sanitizer_LaunchData& launch, std::uintptr_t exec,
                                      std::uintptr_t node, bool measure) {
  std::lock_guard lock(mutex_);
  graph_launch_state& mine = graph_launches_[std::this_thread::get_id()];
  const CUfunction f = launch.function;
  function_use& use = function_uses_[f];
  if (mine.functions.insert(f).second && ++use.launches > 1) use.contended = true;
  if (patched_.count(launch.module) == 0) return false;
  if (nodes_with_launch_data_.count({exec, node}) != 0) {
    null_launch_data_locked(launch);  // what it has, again (Note [A graph node keeps ...])
    return false;
  }
  // Note [Unmeasured graph nodes read null]: the first node of f without
  // per-launch data decides for all of them in this launch.
  if (const auto d = mine.measured.find(f); d != mine.measured.end()) {
    if (d->second) null_node_launch_data_locked(launch, exec, node);  // out of the table
    return false;
  }
  const bool measured = measure && use.launches == 1 && measure_node_locked(mine, launch, node);
  mine.measured[f] = measured;
  if (!measured) null_function_data_locked(f);
  return measured;
}

// The node's function's data set to a cleared table for this launch.
bool launch_tracker::measure_node_locked(graph_launch_state& mine,
                                         const Sanitizer_LaunchData& launch, std::uintptr_t node) {
  const CUfunction f = launch.function;
  const auto t = cleared_table_locked(launch, 0);
  if (!t) return false;
  null_function_data_.erase(f);
  if (lib_.set_callback_data(f, t->device) != SANITIZER_SUCCESS) {
    ++stats_.failed;
    release_locked(*t);
    return false;
  }
  ++handed_out_[launch.module];
  mine.nodes.push_back(graph_node_table{node, f, launch.module, launch.stream, launch.context,
                                        launch.hStream, *t, false});
  return true;
}

// Note [Unmeasured graph nodes read null]
// A kernel node of a patched module runs the patched code, which reads the
// node's per-launch data if it ever had any, else its function's data.
// With neither set the code read a wild pointer (H200, 2026-11-28: an
// illegal address in every graph of a patched module; the probe's
// PROBE_GRAPH_FUNCDATA=nothing). Null per-launch data would do, but a node
// keeps it (Note [A graph node keeps its per-launch data]) and could then
// never be measured; the function's data set to null does too (the probe's
// PROBE_GRAPH_FUNCDATA=fnull: the graph ran, values right) and costs the
// node nothing. The function's data is bound once per launch for all of its
// nodes without per-launch data, so the first of them decides: measured,
// and every later one of the launch gets null per-launch data (kept) to
// stay out of its table; not measured, and the function's data is null for
// all of them. Set once per function while it stays null (patching a
// module sets it again: whether patching keeps it is not known).
void launch_tracker::null_function_data_locked(CUfunction f) {
  if (null_function_data_.count(f) != 0) return;
  if (lib_.set_callback_data(f, nullptr) == SANITIZER_SUCCESS) null_function_data_.insert(f);
}

void launch_tracker::graph_node_unmeasured(const Sanitizer_LaunchData& launch,
                                           std::uintptr_t exec, std::uintptr_t node) {
  forget_this_threads_launch();
  std::lock_guard lock(mutex_);
  if (patched_.count(launch.module) != 0) null_node_launch_data_locked(launch, exec, node);
}

void launch_tracker::null_node_launch_data_locked(const Sanitizer_LaunchData& launch,
                                                  std::uintptr_t exec, std::uintptr_t node) {
  null_launch_data_locked(launch);
  nodes_with_launch_data_.insert({exec, node});
}

void launch_tracker::forget_graph_exec(std::uintptr_t exec) {
  std::lock_guard lock(mutex_);
  const auto first = nodes_with_launch_data_.lower_bound({exec, 0});
  auto last = first;
  while (last != nodes_with_launch_data_.end() && last->first == exec) ++last;
  nodes_with_launch_data_.erase(first, last);
}

std::vector<launch_tracker::measured_node> launch_tracker::graph_launched() {
  graph_launch_state mine;
  {
    std::lock_guard lock(mutex_);
    const auto it = graph_launches_.find(std::this_thread::get_id());
    if (it == graph_launches_.end()) return {};
    mine = std::move(it->second);
    graph_launches_.erase(it);
    std::set<CUfunction> contended;
    for (const CUfunction f : mine.functions) {
      const auto use = function_uses_.find(f);
      if (use == function_uses_.end()) continue;
      if (use->second.contended) contended.insert(f);
      if (--use->second.launches == 0) function_uses_.erase(use);
    }
    for (graph_node_table& n : mine.nodes) n.dropped |= contended.count(n.function) != 0;
  }
  // The program's next graph launches get no table of ours.
  std::vector<CUfunction> nulled;
  for (const graph_node_table& n : mine.nodes) {
    if (lib_.set_callback_data(n.function, nullptr) == SANITIZER_SUCCESS) nulled.push_back(n.function);
  }
  if (!nulled.empty()) {
    std::lock_guard lock(mutex_);
    null_function_data_.insert(nulled.begin(), nulled.end());
  }
  if (mine.nodes.empty()) return {};
  const graph_node_table& first = mine.nodes.front();
  const CUevent done = event_after(first.ctx, first.t.generation, first.stream, first.hstream);
  std::vector<measured_node> out;
  std::lock_guard lock(mutex_);
  // A dropped table goes in flight too, unread: its node may still write
  // into it until the launch's event completes.
  for (std::size_t i = 0; i < mine.nodes.size(); ++i) {
    const graph_node_table& n = mine.nodes[i];
    --handed_out_[n.module];
    launch_state s;
    s.t = n.t;
    s.function = n.function;
    s.module = n.module;
    s.stream = n.stream;
    s.ctx = n.ctx;
    s.done = done;
    s.owns_event = i + 1 == mine.nodes.size();
    s.dropped = n.dropped;
    enqueue_locked(s);
    if (!s.dropped) out.push_back({last_id_, n.node});
  }
  return out;
}

CUevent launch_tracker::new_event(CUcontext ctx) {
  context_scope scope(driver_, ctx);
  CUevent e = nullptr;
  if (driver_.event_create(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return nullptr;
  return e;
}

// Under poll_mutex_ (Note [Sanitizer calls outside our lock]).
Sanitizer_StreamHandle launch_tracker::private_stream(CUcontext ctx) {
  const std::uint64_t generation = contexts_.of(ctx);
  if (const auto it = private_streams_.find(ctx);
      it != private_streams_.end() && it->second.generation == generation) {
    return it->second.handle;
  }
  context_scope scope(driver_, ctx);
  CUstream s = nullptr;
  Sanitizer_StreamHandle h = nullptr;
  if (driver_.stream_create(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      lib_.stream_handle(ctx, s, &h) != SANITIZER_SUCCESS) {
    h = nullptr;
  }
  private_streams_[ctx] = {generation, h};
  return h;
}

std::uint64_t launch_tracker::context_generations::of(CUcontext ctx) {
  std::lock_guard lock(mutex_);
  return generations_[ctx];
}

bool launch_tracker::context_generations::current(CUcontext ctx,
                                                  std::uint64_t generation) const noexcept {
  std::lock_guard lock(mutex_);
  const auto it = generations_.find(ctx);
  return (it != generations_.end() ? it->second : 0) == generation;
}

// Inside the driver's context-destroy callback, where the driver may hold a
// lock of its own: no driver call is made under mutex_.
void launch_tracker::context_generations::destroyed(CUcontext ctx) {
  std::lock_guard lock(mutex_);
  ++generations_[ctx];
}

std::optional<std::uintptr_t> launch_tracker::driver_pinning::pin(void* p,
                                                                 std::size_t bytes) noexcept {
  if (ctx == nullptr || driver_.mem_host_register == nullptr) return std::nullopt;
  try {
    const std::uint64_t generation = contexts_.of(ctx);
    {
      context_scope scope(driver_, ctx);
      if (driver_.mem_host_register(p, bytes, CU_MEMHOSTREGISTER_PORTABLE) != CUDA_SUCCESS) {
        return std::nullopt;  // used pageable
      }
    }
    std::lock_guard lock(mutex_);
    pins_[++next_token_] = {ctx, generation};
    return next_token_;
  } catch (const std::bad_alloc&) {
    return std::nullopt;
  }
}

void launch_tracker::driver_pinning::unpin(void* p, std::uintptr_t token) noexcept {
  std::pair<CUcontext, std::uint64_t> pinned_in;
  {
    std::lock_guard lock(mutex_);
    const auto it = pins_.find(token);
    if (it == pins_.end()) return;
    pinned_in = it->second;
    pins_.erase(it);
  }
  // A destroyed context took its pins with it; its handle is not used.
  if (!contexts_.current(pinned_in.first, pinned_in.second)) return;
  context_scope scope(driver_, pinned_in.first);
  driver_.mem_host_unregister(p);
}

// Under poll_mutex_, not mutex_: the copies take the Sanitizer API's lock.
precise::decoded_footprint launch_tracker::read_back(const launch_state& l,
                                                     precise::decode_scratch& scratch,
                                                     std::uint64_t& copy_ns) {
  const Sanitizer_StreamHandle via = private_stream(l.ctx);
  pinning_.ctx = l.ctx;  // a buffer that grows now is pinned in it
  scratch.pinning = &pinning_;
  const auto fetch = [&](void* dst, std::uint64_t src, std::size_t n) {
    const auto start = std::chrono::steady_clock::now();
    const bool copied =
        lib_.memcpy_to_host(dst, reinterpret_cast<void*>(src), n, via) == SANITIZER_SUCCESS;
    copy_ns += nanoseconds_since(start);
    return copied;
  };
  try {
    return precise::fetch_footprint(l.t.layout, reinterpret_cast<std::uint64_t>(l.t.device),
                                    fetch, scratch, precise::bitmap_window_slots,
                                    options_.max_runs);
  } catch (const std::exception&) {
    return unmeasured();
  }
}

void launch_tracker::retire_locked(const launch_state& l, const precise::decoded_footprint& d) {
  if (d.failed) ++stats_.failed;
  ++stats_.measured;
  stats_.pages += d.pages;
  stats_.fragmented_pages += d.fragmented_pages;
  stats_.bytes_read_back += d.bytes_read_back;
  if (d.spilled) ++stats_.spilled;
  if (!d.complete) ++stats_.incomplete;
  if (d.too_fragmented) ++stats_.too_fragmented;
  // A table that was too small gets larger; one too fragmented to use was
  // large enough (Note [A footprint too fragmented to use]).
  // The hint is the kernel's largest need so far (Note [Tables sized from
  // measured launches]): a kernel of varying sizes keeps room for its
  // largest launch.
  const bool too_small = !d.complete && !d.too_fragmented;
  std::uint32_t& hint = slots_hint_[l.function];
  hint = std::max({hint, too_small ? l.t.layout.slots() * 4 : std::uint32_t{16}, d.pages * 2});
  release_launch_locked(l);
}

void launch_tracker::release_launch_locked(const launch_state& l) {
  release_locked(l.t);
  // Note [What a destroyed context took with it]
  if (l.done != nullptr && l.owns_event && contexts_.current(l.t.ctx, l.t.generation)) {
    free_events_[{l.t.ctx, l.t.generation}].push_back(l.done);
  }
}

// The exit's drain waits for each kernel by asking, so that a signal's
// hurry() can stop it (Note [A signal while the report is made]); false
// once hurried. Only there: a program thread waiting for room keeps
// cuEventSynchronize.
bool launch_tracker::completed_unless_hurried(CUevent done) {
  for (;;) {
    if (hurried_.load(std::memory_order_acquire)) return false;
    const CUresult r = driver_.event_query(done);
    if (r != CUDA_ERROR_NOT_READY) return true;  // done, or failed: nothing to wait for
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// Takes the completed launches at the head of the queue, in order; waits for
// them when asked to or when too much is in flight.
std::vector<launch_tracker::launch_state> launch_tracker::take_completed(bool wait_all) {
  std::vector<launch_state> taken;
  for (;;) {
    launch_state head;
    bool must_wait = false;
    {
      std::lock_guard lock(mutex_);
      if (in_flight_.empty()) break;
      head = in_flight_.front();
      must_wait = wait_all || in_flight_.size() > options_.max_pending ||
                  in_flight_bytes_ > options_.max_pending_bytes;
    }
    if (head.done != nullptr) {
      if (wait_all) {
        if (!completed_unless_hurried(head.done)) break;
      } else if (must_wait) {
        driver_.event_synchronize(head.done);
      } else if (driver_.event_query(head.done) != CUDA_SUCCESS) {
        break;
      }
    }
    std::lock_guard lock(mutex_);
    if (head.done != nullptr && must_wait) ++stats_.waits;
    in_flight_.pop_front();  // still `head`: only pollers pop, one at a time
    in_flight_count_.store(in_flight_.size(), std::memory_order_release);
    in_flight_bytes_ -= head.t.layout.bytes;
    taken.push_back(head);
  }
  return taken;
}

void launch_tracker::poll(bool wait_all, const footprint_callback& done) {
  // A thread that finds another polling leaves it to that one, unless it
  // must wait: a blocked poller could hold the Sanitizer API's lock that the
  // polling one's copies need.
  std::unique_lock order(poll_mutex_, std::defer_lock);
  if (wait_all) {
    order.lock();
  } else if (!order.try_lock()) {
    return;
  }
  std::vector<launch_state> taken = take_completed(wait_all);
  if (std::any_of(taken.begin(), taken.end(), [](const launch_state& l) { return l.dropped; })) {
    std::lock_guard lock(mutex_);
    for (const launch_state& l : taken) {
      if (l.dropped) release_launch_locked(l);
    }
    std::erase_if(taken, [](const launch_state& l) { return l.dropped; });
  }
  if (taken.empty()) return;
  for (const auto& l : taken) {
    precise::decode_scratch* const scratch = take_scratch();
    const auto start = std::chrono::steady_clock::now();
    std::uint64_t copy_ns = 0;
    precise::decoded_footprint d = read_back(l, *scratch, copy_ns);
    const std::uint64_t read_back_ns = nanoseconds_since(start);
    {
      std::lock_guard lock(mutex_);
      stats_.read_back_ns += read_back_ns;
      stats_.copy_ns += copy_ns;
      retire_locked(l, d);
    }
    // Handed on outside mutex_ (the callback feeds the log), still in order.
    finish(l, std::move(d), scratch, done);
  }
}

// Note [Decoded on a thread of its own]
// A read-back's copies must run where they run now: on a program thread,
// at an API call's entry, while no stream captures (Note [Nothing of ours
// while a stream captures]) and outside mutex_ (Note [Sanitizer calls
// outside our lock]). What follows them needs no CUDA at all: sorting the
// pages, making the intervals, and handing the footprint to the model,
// which releases the records held behind the launch. For a large launch
// that is most of the read-back: the triad's 49,152 pages under --precise
// took 2.1 to 2.8 ms a launch to decode on the H200's host against 0.5 ms
// of copies, all on the program's thread (STREAMSAN_DEBUG's read_back_ms
// and copies, 2026-11-29). So when the engine has a thread of its own
// (Note [Where the engine runs]), the second half goes to a decoding
// thread, one launch at a time in the order read back: footprints still
// reach the model in launch order, and the program's thread goes on. It
// holds the launch's scratch until then; with all decode_scratches in
// use, the next read-back waits for one (the queue is bounded). drain
// waits for the thread too, so nothing is lost at exit.
void launch_tracker::finish(const launch_state& l, precise::decoded_footprint d,
                            precise::decode_scratch* scratch, const footprint_callback& done) {
  in_launch_order([this, id = l.id, function = l.function, d = std::move(d), scratch,
                   done]() mutable { hand_over(id, function, d, scratch, done); });
}

// A job that hands a footprint to the model: on the decoding thread, after
// every one handed on before it, or here.
template <class Job>
void launch_tracker::in_launch_order(Job job) {
  if (decode_thread_) {
    decoder_.submit(std::move(job));
  } else {
    decoder_.run_here(job);
  }
}

// Note [A decoding job that throws]
// A measured launch's record, and every record after it, wait in the
// footprint resolver until its footprint is handed to the model (Note
// [Measured footprints arrive late]). A decoding job that threw before
// that (the second half of the decode out of memory, the model's
// hand-over throwing) ended in ordered_worker's catch, which dropped it:
// the launch stayed awaited, so the log behind it was held until exit
// (every report after it late, and lost if the program died first), its
// scratch never came back (the fifth such launch left the next read-back
// waiting for ever), and without a decoding thread the exception left
// poll() with the launches read back after it never handed over. The
// worker cannot do better: it knows a job, not a launch. So the job
// catches what its decode and its hand-over throw, and hands the launch
// over as a table that could not be read back is (decoded_footprint's
// `failed`, not complete): the model keeps its inferred accesses and the
// resolver lets the log go on at once, in order. Its scratch goes back
// however the decode ends. The failure is counted (`failed` and
// `decodes` in STREAMSAN_DEBUG's sanitizer line) and told to the source,
// which names the kernel and the first reason once at exit, as it names a
// module it could not patch (sanitizer_source::decode_failures()). The
// model makes a footprint's accesses before it lets go of the launch
// (cuda_model::measured_launch_done), so a hand-over that threw there
// finds the launch again the second time. What the unmeasured hand-over
// throws in turn reaches the worker's last resort
// (ordered_worker::run_here, the inline path's too), which counts it
// (`jobs_thrown`) and keeps its message: that launch alone then waits for
// exit.
void launch_tracker::hand_over(launch_id id, CUfunction function, precise::decoded_footprint& d,
                               precise::decode_scratch* scratch,
                               const footprint_callback& done) {
  try {
    finish_decode(d, scratch);
    done(id, d);
  } catch (const std::exception& e) {
    hand_over_unmeasured(id, function, e.what(), d.failed, done);
  } catch (...) {
    hand_over_unmeasured(id, function, "an exception that is not a std::exception", d.failed,
                         done);
  }
}

// The second half of the decode. The scratch goes back however it ends:
// the next read-backs wait for a free one.
void launch_tracker::finish_decode(precise::decoded_footprint& d,
                                   precise::decode_scratch* scratch) {
  struct given_back {
    launch_tracker& tracker;
    precise::decode_scratch* scratch;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    ~given_back() {
      tracker.give_back_scratch(scratch);
      std::lock_guard lock(tracker.mutex_);
      tracker.stats_.decode_ns += nanoseconds_since(start);
    }
  } back{*this, scratch};
  if (d.failed) return;
  if (decode_hook_) decode_hook_();
  precise::finish_footprint(*scratch, d);
}

// Note [A decoding job that throws]. `counted_failed`: the read-back had
// failed already, and was counted then.
void launch_tracker::hand_over_unmeasured(launch_id id, CUfunction function, const char* why,
                                          bool counted_failed, const footprint_callback& done) {
  {
    std::lock_guard lock(mutex_);
    if (!counted_failed) ++stats_.failed;
    ++stats_.decode_failed;
  }
  if (failure_callback_) {
    try {
      failure_callback_(function, why);
    } catch (...) {
      // No memory to note it: the counts above stand.
    }
  }
  done(id, unmeasured());  // what this throws is the worker's last resort's
}

// Note [Launches in flight when the program is stopped]
// A program stopped by a signal (Note [Reports when the program dies])
// gets its report from the signal handler, within a few seconds: a
// `timeout -k`, a container runtime or a batch scheduler kills it soon
// after. Reading back what is in flight cannot promise that: a launch's
// kernel may run for minutes more (a patched kernel runs many times
// longer than its program expects), and its table may need many copies.
// So each launch in flight is handed over unmeasured, as one whose table
// could not be read back: the records held behind it go on to the engine
// with its inferred footprint, whose conflicts are possible races, never
// reports. Its table and event stay the tracker's (abandoned_), never
// reused, since its kernel may still write into the table; they go with
// the tracker, which a process about to end never destroys. A
// launch read back already goes on to the decoding thread as usual; the
// abandoned ones follow it there, so footprints still reach the model in
// launch order. A read-back in progress on another thread (the signal may
// have come while it copied) holds the poll lock: then nothing is
// abandoned here, and the records behind those launches stay unchecked.
std::size_t launch_tracker::abandon(const footprint_callback& done) {
  std::unique_lock order(poll_mutex_, std::try_to_lock);
  if (!order.owns_lock()) return 0;
  std::deque<launch_state> taken;
  {
    std::lock_guard lock(mutex_);
    taken.swap(in_flight_);
    in_flight_count_.store(0, std::memory_order_release);
    in_flight_bytes_ = 0;
  }
  std::size_t abandoned = 0;
  for (const launch_state& l : taken) {
    if (l.dropped) continue;
    ++abandoned;
    in_launch_order([id = l.id, done] { done(id, unmeasured()); });
  }
  std::lock_guard lock(mutex_);
  stats_.abandoned += abandoned;
  abandoned_.insert(abandoned_.end(), taken.begin(), taken.end());
  return abandoned;
}

void launch_tracker::wait_decoded() {
  if (decode_thread_) decoder_.wait_idle();
}

bool launch_tracker::wait_decoded_until(std::chrono::steady_clock::time_point deadline) {
  return !decode_thread_ || decoder_.wait_idle_until(deadline);
}

precise::decode_scratch* launch_tracker::take_scratch() {
  std::unique_lock lock(scratch_mutex_);
  if (free_scratches_.empty() && scratches_.size() < decode_scratches) {
    scratches_.push_back(std::make_unique<precise::decode_scratch>());
    return scratches_.back().get();
  }
  scratch_freed_.wait(lock, [this] { return !free_scratches_.empty(); });
  precise::decode_scratch* s = free_scratches_.back();
  free_scratches_.pop_back();
  return s;
}

void launch_tracker::give_back_scratch(precise::decode_scratch* s) {
  {
    std::lock_guard lock(scratch_mutex_);
    free_scratches_.push_back(s);
  }
  scratch_freed_.notify_one();
}

tracker_stats launch_tracker::stats() const {
  tracker_stats s;
  {
    std::lock_guard lock(mutex_);
    s = stats_;
  }
  s.jobs_thrown = decoder_.failures();
  return s;
}

}  // namespace streamsan::sanitizer_api
