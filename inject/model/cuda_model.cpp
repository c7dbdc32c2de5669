#include "inject/model/cuda_model.h"

#include <algorithm>
#include <limits>

namespace streamsan::injection {
namespace {

// cudaEvent* / CU_EVENT_* flags (the values are the same).
constexpr unsigned cuda_event_blocking_sync = 0x1;
constexpr unsigned cuda_event_disable_timing = 0x2;
constexpr unsigned cuda_event_interprocess = 0x4;
constexpr unsigned cuda_stream_non_blocking = 0x1;

std::uint32_t event_flags_from_cuda(unsigned cuda_flags) {
  std::uint32_t f = event_flag_none;
  if (!(cuda_flags & cuda_event_disable_timing)) f |= event_flag_timing;
  if (cuda_flags & cuda_event_blocking_sync) f |= event_flag_blocking_sync;
  if (cuda_flags & cuda_event_interprocess) f |= event_flag_interprocess;
  return f;
}

// Note [Threads end in the log]
void thread_exit_hook(void* model) {
  try {
    static_cast<cuda_model*>(model)->thread_exited();
  } catch (...) {
    // The thread ends either way; its state is then kept.
  }
}

}  // namespace

cuda_model::cuda_model(recorder& rec, driver_queries& driver) : rec_(rec), driver_(driver) {
  thread_key_created_ = pthread_key_create(&thread_key_, thread_exit_hook) == 0;
  markers_->model = this;
}

cuda_model::~cuda_model() {
  {
    std::lock_guard lock(markers_->mutex);
    markers_->model = nullptr;
  }
  if (thread_key_created_) pthread_key_delete(thread_key_);
}

// The thread's key is set with its first record (Note [A thread hook with
// the thread's id] in sanitizer/log/recorder.cpp).
void cuda_model::emit(const call_site& at, const record_body& body) {
  constexpr auto set_thread_key = [](const void* model) {
    const auto& m = *static_cast<const cuda_model*>(model);
    return !m.thread_key_created_ || pthread_setspecific(m.thread_key_, model) == 0;
  };
  rec_.emit_with_stack(body, at.frames, {set_thread_key, this});
}

void cuda_model::thread_exited() {
  std::lock_guard lock(mutex_);
  const std::uint32_t thread = raw(rec_.current_thread());
  auto it = per_thread_streams_.lower_bound({thread, std::numeric_limits<std::int32_t>::min()});
  while (it != per_thread_streams_.end() && it->first.first == thread) {
    // Not through emit(): it would set the thread's key again from inside
    // the key's own destructor.
    if (const auto h = handoff_events_.find(raw(it->second)); h != handoff_events_.end()) {
      rec_.emit_with_stack(event_destroy{h->second}, {});
      handoff_events_.erase(h);
    }
    annotations_.erase(raw(it->second));
    capturing_.erase(raw(it->second));
    capture_graphs_.erase(raw(it->second));
    capturing_changed();
    it = per_thread_streams_.erase(it);
  }
  rec_.thread_exited();
}

// ---- streams ----

stream_id cuda_model::new_stream_locked(const call_site& at, std::int32_t device,
                                        stream_flavor flavor, std::int32_t priority,
                                        stream_role role) {
  if (role == stream_role::program) concurrency_.stream_added(device, flavor);
  const stream_id id = rec_.new_stream_id();
  emit(at, stream_create{id, device, flavor, priority});
  return id;
}

cuda_model::stream_ref cuda_model::prepare(stream_arg s) {
  std::uintptr_t h = s.handle;
  if (h == 0) h = s.per_thread_default ? per_thread_stream_handle : legacy_stream_handle;
  const bool default_stream = h == legacy_stream_handle || h == per_thread_stream_handle;
  return stream_ref{h, default_stream ? driver_.current_device() : 0};
}

// Note [Answers found at once, then a call]
// A steady launch finds its stream and its kernel in the recent slots, has
// no annotation and is in no operator, but each helper that answered it
// first saved every register its rare path needs (a driver question, a
// map insert): resolve_stream and kernel_info_for cost some 20
// instructions of prologue and epilogue each, and forget_unloaded_kernels
// 10 more, for a few compares. Each helper is now the answer found at
// once, and a tail call of the full lookup (the *_slow function, which
// repeats those first checks: they are a few loads) when it is not there.
stream_id cuda_model::resolve_stream(model_lock& lock, const call_site& at, stream_ref s) {
  const std::uintptr_t h = s.handle;
  if (h != legacy_stream_handle && h != per_thread_stream_handle) {
    if (const auto* e = streams_.recent(h)) return e->id;
  }
  return resolve_stream_slow(lock, at, s);
}

stream_id cuda_model::resolve_stream_slow(model_lock& lock, const call_site& at, stream_ref s) {
  const std::uintptr_t h = s.handle;
  if (h == legacy_stream_handle) {
    const std::int32_t device = s.device;
    if (const auto it = legacy_streams_.find(device); it != legacy_streams_.end()) {
      return it->second;
    }
    const auto id = new_stream_locked(at, device, stream_flavor::legacy_default, 0);
    legacy_streams_.emplace(device, id);
    return id;
  }
  if (h == per_thread_stream_handle) {
    const std::int32_t device = s.device;
    const auto key = std::make_pair(raw(rec_.current_thread()), device);
    if (const auto it = per_thread_streams_.find(key); it != per_thread_streams_.end()) {
      return it->second;
    }
    const auto id = new_stream_locked(at, device, stream_flavor::per_thread_default, 0);
    per_thread_streams_.emplace(key, id);
    return id;
  }
  if (const auto* e = streams_.find(h)) return e->id;
  // A stream made where we could not see it (inside a library, or before
  // the callbacks were enabled): ask the driver what it is, unlocked.
  lock.unlock();
  const auto d = driver_.describe_stream(h);
  const stream_description desc = d ? *d : stream_description{driver_.current_device(), 0, 0};
  lock.lock();
  if (const auto* e = streams_.find(h)) return e->id;  // another thread was first
  const auto id = new_stream_locked(
      at, desc.device,
      (desc.flags & cuda_stream_non_blocking) ? stream_flavor::non_blocking
                                              : stream_flavor::blocking,
      desc.priority);
  streams_.create(h, id);
  return id;
}

void cuda_model::stream_created(const call_site& at, std::uintptr_t handle, unsigned flags,
                                std::int32_t priority) {
  const std::int32_t device = driver_.current_device();
  std::lock_guard lock(mutex_);
  const auto id = new_stream_locked(
      at, device,
      (flags & cuda_stream_non_blocking) ? stream_flavor::non_blocking : stream_flavor::blocking,
      priority);
  streams_.create(handle, id);
}

void cuda_model::stream_destroyed(const call_site& at, std::uintptr_t handle) {
  const stream_ref stream = prepare({handle, false});
  model_lock lock(mutex_);
  // Destroying a destroyed stream is reported through the engine's
  // destroyed_stream_use, so the record goes out either way.
  const stream_id id = resolve_stream(lock, at, stream);
  streams_.destroy(handle);
  drop_handoff_event_locked(at, id);
  annotations_.erase(raw(id));
  capturing_.erase(raw(id));
  capture_graphs_.erase(raw(id));
  capturing_changed();
  emit(at, stream_destroy{id});
}

void cuda_model::stream_synchronized(const call_site& at, stream_arg s) {
  const stream_ref stream = prepare(s);
  model_lock lock(mutex_);
  emit(at, stream_synchronize{resolve_stream(lock, at, stream)});
}

void cuda_model::stream_queried(const call_site& at, stream_arg s, bool complete) {
  const stream_ref stream = prepare(s);
  model_lock lock(mutex_);
  emit(at, stream_query{resolve_stream(lock, at, stream), complete});
}

void cuda_model::device_synchronized(const call_site& at) {
  const std::int32_t device = driver_.current_device();
  std::lock_guard lock(mutex_);
  emit(at, device_synchronize{device});
}

// Note [Device reset]
// cudaDeviceReset (and the driver's cuDevicePrimaryCtxReset, which it
// calls) destroys "all resources associated with the current device in the
// current process", among them the memory of cudaMalloc, cudaMallocHost,
// cudaMallocManaged and cudaMallocPitch, but not that of cudaMallocAsync
// (the runtime API's documentation). Many programs call it last, for
// profilers. So the device's allocations of those kinds (device memory,
// which also holds CUDA arrays and opened IPC memory, pinned host memory,
// managed memory) are freed; stream-ordered memory and the mappings of
// virtual memory (their own blocks) are not. The reset "resets the device
// immediately" and promises no synchronization, but it does not run the
// device's work either: whether pending work finished, was cut short or
// raced with the reset is not documented, so nothing is reported about it.
// The reset is taken as a device synchronize followed by synchronizing
// frees (what cudaFree is, S-MEM-5). A race the reset cut short is missed;
// no report rests on a guess. Streams and events the reset destroyed are
// not dropped: their handles may come back from the next create, which
// replaces them, and a use of an old handle is the program's own error.
void cuda_model::device_reset(const call_site& at, std::optional<std::int32_t> reset) {
  const std::int32_t device = reset ? *reset : driver_.current_device();
  model_lock lock(mutex_);
  emit(at, device_synchronize{device});
  std::vector<std::uint64_t> bases;
  allocations_.for_each_live_overlapping(0, ~std::uint64_t{0}, [&](const allocation& a) {
    if (a.device != device) return;
    switch (a.kind) {
      case memory_kind::device:
      case memory_kind::pinned_host:
      case memory_kind::managed:
        bases.push_back(a.base);
        return;
      case memory_kind::pageable_host:
      case memory_kind::stream_ordered:
      case memory_kind::cached_block:
        return;
    }
  });
  for (const std::uint64_t base : bases) {
    if (const auto a = allocations_.erase(base)) emit(at, free_record{a->id, free_mode::synchronizing, {}});
  }
}

// ---- events ----

event_id cuda_model::resolve_event_locked(const call_site& at, std::uintptr_t handle) {
  if (const auto* e = events_.find(handle)) return e->id;
  // Not seen created (an IPC event, or made before the callbacks were on).
  const auto id = rec_.new_event_id();
  emit(at, event_create{id, event_flag_none});
  events_.create(handle, id);
  return id;
}

void cuda_model::event_created(const call_site& at, std::uintptr_t handle, unsigned cuda_flags) {
  const bool interprocess = (cuda_flags & cuda_event_interprocess) != 0;
  const std::int32_t device = interprocess ? driver_.current_device() : 0;
  std::lock_guard lock(mutex_);
  const auto id = rec_.new_event_id();
  events_.create(handle, id);
  emit(at, event_create{id, event_flags_from_cuda(cuda_flags)});
  if (interprocess) recorded_elsewhere_locked(at, id, device);
}

// Note [IPC events]
// An interprocess event (cudaIpcOpenEventHandle's, or one created with
// cudaEventInterprocess, which another process may open) can be recorded by
// any process that holds it. A wait or synchronize on it before this process
// recorded it waits for another process's record: not an error, and it
// orders nothing this process can see. So the model records it, as soon as
// it exists, on a stream of its own per device that stands for the other
// processes (non-blocking, never given work): the event counts as recorded
// and its snapshot holds only what the opening thread was ordered after. A
// record in this process replaces that snapshot as usual (S-EVENT-1).
// Missed: a wait that comes before any process recorded the event (a bug
// S-EVENT-3 would name), and whatever the other processes' work orders.
void cuda_model::recorded_elsewhere_locked(const call_site& at, event_id event,
                                           std::int32_t device) {
  auto [it, fresh] = other_process_streams_.try_emplace(device);
  if (fresh) {
    it->second =
        new_stream_locked(at, device, stream_flavor::non_blocking, 0, stream_role::stand_in);
  }
  emit(at, event_record{event, it->second});
}

void cuda_model::ipc_event_opened(const call_site& at, std::uintptr_t handle) {
  const std::int32_t device = driver_.current_device();
  std::lock_guard lock(mutex_);
  const auto id = rec_.new_event_id();
  events_.create(handle, id);
  emit(at, event_create{id, event_flag_interprocess});
  recorded_elsewhere_locked(at, id, device);
}

void cuda_model::event_destroyed(const call_site& at, std::uintptr_t handle) {
  std::lock_guard lock(mutex_);
  const auto id = resolve_event_locked(at, handle);
  events_.destroy(handle);
  emit(at, event_destroy{id});
}

void cuda_model::event_recorded(const call_site& at, std::uintptr_t event, stream_arg s) {
  const stream_ref stream = prepare(s);
  model_lock lock(mutex_);
  const stream_id on = resolve_stream(lock, at, stream);
  emit(at, event_record{resolve_event_locked(at, event), on});
}

void cuda_model::stream_waited_event(const call_site& at, stream_arg s, std::uintptr_t event) {
  const stream_ref stream = prepare(s);
  model_lock lock(mutex_);
  const stream_id on = resolve_stream(lock, at, stream);
  emit(at, event_wait{resolve_event_locked(at, event), on});
}

void cuda_model::event_synchronized(const call_site& at, std::uintptr_t event) {
  std::lock_guard lock(mutex_);
  emit(at, event_synchronize{resolve_event_locked(at, event)});
}

void cuda_model::event_queried(const call_site& at, std::uintptr_t event, bool complete) {
  std::lock_guard lock(mutex_);
  emit(at, event_query{resolve_event_locked(at, event), complete});
}

// ---- memory ----

void cuda_model::allocated(const call_site& at, std::uint64_t address, std::uint64_t size,
                           memory_kind kind, std::optional<stream_arg> stream) {
  const std::int32_t device = driver_.current_device();
  const auto on = stream ? std::optional(prepare(*stream)) : std::nullopt;
  // Note [Graph allocations]: captured, it is an alloc node of the graph.
  if (on && captures(*on)) return;
  model_lock lock(mutex_);
  const stream_id s = on ? resolve_stream(lock, at, *on) : stream_id{};
  const alloc_id id = rec_.new_alloc_id();
  allocations_.insert(allocation{id, address, size, kind, device});
  alloc_record r;
  r.alloc = id;
  r.kind = kind;
  r.device = device;
  r.size = size;
  r.address = address;
  r.stream = s;
  emit(at, r);
}

void cuda_model::freed(const call_site& at, std::uint64_t address, free_mode mode,
                       std::optional<stream_arg> stream) {
  const auto on = stream ? std::optional(prepare(*stream)) : std::nullopt;
  // Note [Graph allocations]: captured, it is a free node of the graph.
  if (on && mode == free_mode::stream_ordered && captures(*on)) return;
  model_lock lock(mutex_);
  const auto a = allocations_.erase(address);
  if (!a) return;  // cudaFree(0), or memory we never saw allocated
  // The address is out of the map already: the driver hands it out again
  // only once this free returns (Note [Frees and destroys on entry]).
  const stream_id s = on ? resolve_stream(lock, at, *on) : stream_id{};
  emit(at, free_record{a->id, mode, s});
}

std::optional<byte_range> cuda_model::tracked_range_locked(const memory_region& r,
                                                           memory_kind& kind) const {
  const auto hit = allocations_.find(r.address);
  if (!hit) return std::nullopt;
  kind = hit->block.kind;
  const std::uint64_t room = hit->block.size > hit->offset ? hit->block.size - hit->offset : 0;
  return byte_range{hit->block.id, hit->offset, std::min(r.size, room)};
}

byte_range cuda_model::resolve_range(model_lock& lock, const memory_region& r,
                                     memory_kind& kind) {
  if (const auto tracked = tracked_range_locked(r, kind)) return *tracked;
  // Memory streamsan never saw allocated: the driver says what it is.
  lock.unlock();
  kind = driver_.untracked_memory_kind(r.address, r.side);
  lock.lock();
  if (const auto tracked = tracked_range_locked(r, kind)) return *tracked;  // allocated meanwhile
  return byte_range{alloc_id{}, 0, r.size};
}

void cuda_model::copied(const call_site& at, stream_arg s, const memory_region& dst,
                        const memory_region& src, bool async) {
  const stream_ref stream = prepare(s);
  model_lock lock(mutex_);
  memcpy_record r;
  r.stream = resolve_stream(lock, at, stream);
  r.dst = resolve_range(lock, dst, r.dst_kind);
  r.src = resolve_range(lock, src, r.src_kind);
  r.async = async;
  emit(at, r);
}

void cuda_model::memset(const call_site& at, stream_arg s, const memory_region& dst,
                        bool async) {
  const stream_ref stream = prepare(s);
  model_lock lock(mutex_);
  memset_record r;
  r.stream = resolve_stream(lock, at, stream);
  r.dst = resolve_range(lock, dst, r.dst_kind);
  r.async = async;
  emit(at, r);
}

// ---- work ----

// Note [Kernel handles die with their module]
void cuda_model::forget_unloaded_kernels_locked() {
  const auto unloads = modules_unloaded_.load(std::memory_order_acquire);
  if (unloads == kernels_unloads_seen_) return;
  kernels_.clear();
  recent_kernels_.clear();
  kernels_unloads_seen_ = unloads;
}

// Note [Answers found at once, then a call]: no module unloaded since the
// cache was last dropped, and the kernel remembered.
const cuda_model::kernel_info& cuda_model::kernel_info_for(model_lock& lock, std::uintptr_t kernel,
                                                           kernel_info& uncached) {
  if (modules_unloaded_.load(std::memory_order_acquire) == kernels_unloads_seen_) {
    if (const kernel_info* recent = recent_kernels_.find(kernel)) return *recent;
  }
  return kernel_info_for_slow(lock, kernel, uncached);
}

const cuda_model::kernel_info& cuda_model::kernel_info_for_slow(model_lock& lock,
                                                                std::uintptr_t kernel,
                                                                kernel_info& uncached) {
  forget_unloaded_kernels_locked();
  if (const kernel_info* recent = recent_kernels_.find(kernel)) return *recent;
  if (const auto it = kernels_.find(kernel); it != kernels_.end()) {
    recent_kernels_.remember(kernel, &it->second);
    return it->second;
  }
  const auto unloads = modules_unloaded_.load(std::memory_order_acquire);
  lock.unlock();
  kernel_info info;
  if (const auto d = driver_.describe_kernel(kernel)) {
    const auto sig = parse_kernel_signature(d->mangled_name);
    info.name = rec_.intern(sig.name);
    if (d->layout_known) info.plans = make_param_plans(d->params, sig);
  } else {
    info.name = rec_.intern("<unknown kernel>");
  }
  lock.lock();
  forget_unloaded_kernels_locked();
  if (modules_unloaded_.load(std::memory_order_acquire) != unloads) {
    // A module went away while we asked: the answer is this call's only.
    uncached = std::move(info);
    return uncached;
  }
  kernel_info& cached = kernels_.try_emplace(kernel, std::move(info)).first->second;
  recent_kernels_.remember(kernel, &cached);
  return cached;
}

bool cuda_model::take_annotation_slow_locked(stream_id s, std::vector<access>& out) {
  const auto it = annotations_.find(raw(s));
  if (it == annotations_.end()) return false;
  out = std::move(it->second);
  annotations_.erase(it);
  return true;
}

void cuda_model::kernel_launched(const call_site& at, stream_arg s, std::uintptr_t kernel,
                                 const kernel_arguments& args, std::string_view fallback_name,
                                 bool cooperative) {
  const std::uint64_t measurement = take_expected_measured_launch();
  const stream_ref on = prepare(s);
  model_lock lock(mutex_);
  const stream_id stream = resolve_stream(lock, at, on);
  // Last to let go of the lock: `info` is valid while it is held.
  kernel_info uncached;
  const kernel_info* info = kernel != 0 ? &kernel_info_for(lock, kernel, uncached) : nullptr;
  const string_id name =
      info ? info->name
           : rec_.intern(fallback_name.empty() ? std::string_view("<unknown kernel>")
                                               : fallback_name);
  if (!take_annotation_locked(stream, scratch_)) {
    scratch_.clear();
    if (in_operator()) {
      // Note [Operators narrow kernel footprints]: the op's tensors are
      // exact; a measurement of this launch is waited for only where an
      // access is inferred (Note [Measured footprints of an operator's
      // launches]).
      op_launch_accesses_locked(info, args, kernel, measurement);
    } else {
      if (info) infer_accesses(info->plans, args, allocations_, scratch_, &info->learned);
      // Note [Texture and surface objects]: looked for only while one lives.
      std::span<const access> objects;
      if (!texture_views_.empty()) [[unlikely]] {
        object_accesses_locked(info, args);
        objects = object_accesses_;
        scratch_.insert(scratch_.end(), objects.begin(), objects.end());
      }
      if (measurement != 0) await_measurement_locked(measurement, kernel, info, args, objects);
    }
  }
  emit(at, kernel_launch{stream, name, scratch_, cooperative});
}

void cuda_model::host_function_launched(const call_site& at, stream_arg s, std::uintptr_t fn) {
  const stream_ref on = prepare(s);
  const string_id name = rec_.intern(driver_.function_name(fn));
  model_lock lock(mutex_);
  const stream_id stream = resolve_stream(lock, at, on);
  if (!take_annotation_locked(stream, scratch_)) scratch_.clear();
  emit(at, host_func{stream, name, scratch_});
  if (host_functions_ != nullptr) host_functions_->logged(stream);
}

void cuda_model::host_function_entering(stream_arg s) {
  const bool per_thread = s.handle == 0 && s.per_thread_default;
  const std::uintptr_t handle = per_thread ? per_thread_stream_handle : s.handle;
  // Ours first: the ThreadSanitizer bridge's marker puts the driver's
  // thread on the body's fiber, where nothing may lock or allocate (Note
  // [The bridge is invisible to TSan]), and ours does both.
  mark_host_function_place(s, handle);
  if (host_functions_ != nullptr) host_functions_->entering(handle);
}

// Note [A host function that ran orders the host]
// A host function (S-HOSTFN-1) runs on a driver thread once all earlier
// work of its stream is complete, and programs use it to tell their host
// threads so: XLA's host function ends the wait for a device-to-host copy,
// then the host reuses the staging buffer and the device buffer for the
// next step's host-to-device copies, issued by another thread. Nothing in
// the log showed that a host thread had seen the copy complete, so the
// reuse was reported as a stream race (jax_training.py, H200), where
// Note [Host threads order what the log does not show] in docs/engine.md
// would have kept it back. So at the entry of each call that enqueues a
// host function, the model records a private event where the function
// will be (everything logged on its stream so far), and enqueues a host
// function of its own there, just before the program's: when the driver
// runs it, the driver's thread synchronizes with that event (logged as
// event_synchronize, then event_destroy) and the program's function runs
// after that. A later conflict with the stream's earlier work is then one
// some host thread had seen complete. The marker needs no wait for the
// call's exit (unlike the ThreadSanitizer bridge's, Note [The marker waits
// for the log]): its place is recorded before it is enqueued. Nothing is
// enqueued on a capturing stream (the marker would become a node of the
// program's graph), so a graph's host nodes order nothing. The cost is the
// rule's own: a race whose later side was issued after the marker ran, by
// timing alone, is counted as host-ordered and not reported. The racy
// host_function_handoff example keeps its download behind a slow kernel
// so that its marker runs after the upload is issued.
void cuda_model::mark_host_function_place(stream_arg s, std::uintptr_t handle) {
  const stream_ref on = prepare(s);
  if (captures(on)) return;  // a driver call: before the lock
  event_id place{};
  {
    model_lock lock(mutex_);
    // A destroyed stream: the program's call reports it, not our record.
    if (const auto* e = streams_.find(on.handle); e != nullptr && e->destroyed) return;
    const stream_id stream = resolve_stream(lock, {}, on);
    place = rec_.new_event_id();
    emit({}, event_create{place, event_flags_from_cuda(0)});
    emit({}, event_record{place, stream});
  }
  struct marker {
    std::shared_ptr<marker_link> link;
    event_id place;
  };
  auto* m = new marker{markers_, place};
  constexpr auto reached = [](void* data) {
    const std::unique_ptr<marker> held(static_cast<marker*>(data));
    std::lock_guard lock(held->link->mutex);
    if (held->link->model != nullptr) held->link->model->host_function_reached(held->place);
  };
  if (!driver_.enqueue_host_function(handle, reached, m)) {
    delete m;
    std::lock_guard lock(mutex_);
    emit({}, event_destroy{place});
  }
}

void cuda_model::host_function_reached(event_id place) noexcept {
  try {
    std::lock_guard lock(mutex_);
    emit({}, event_synchronize{place});
    emit({}, event_destroy{place});
  } catch (...) {
    // The driver's thread must never see our exceptions.
  }
}

void cuda_model::host_function_returned(bool succeeded) {
  if (host_functions_ != nullptr) host_functions_->returned(succeeded);
}

// ---- graphs ----

void cuda_model::capture_began(const call_site& at, stream_arg s) {
  const stream_ref on = prepare(s);
  model_lock lock(mutex_);
  const stream_id stream = resolve_stream(lock, at, on);
  const graph_id g = rec_.new_graph_id();
  capturing_[raw(stream)] = g;
  capturing_changed();
  emit(at, graph_capture_begin{stream, g});
}

void cuda_model::capture_ended(const call_site& at, stream_arg s, std::uintptr_t graph) {
  const stream_ref on = prepare(s);
  model_lock lock(mutex_);
  const stream_id stream = resolve_stream(lock, at, on);
  graph_id g{};
  if (const auto it = capturing_.find(raw(stream)); it != capturing_.end()) {
    g = it->second;
    capturing_.erase(it);
    capturing_changed();
  }
  if (const auto it = capture_graphs_.find(raw(stream)); it != capture_graphs_.end()) {
    const std::uintptr_t built = it->second;
    capture_graphs_.erase(it);
    for (auto site = node_sites_.begin(); site != node_sites_.end();) {
      if (site->second.graph != built) {
        ++site;
      } else if (graph == 0) {
        site = node_sites_.erase(site);
      } else {
        site->second.graph = graph;
        ++site;
      }
    }
  }
  if (graph != 0 && !is_none(g)) graphs_.create(graph, g);
  emit(at, graph_capture_end{stream, g});
}

void cuda_model::graph_destroyed(std::uintptr_t graph) {
  std::lock_guard lock(mutex_);
  graphs_.destroy(graph);
  // A conditional node's bodies die with it (Note [Conditional nodes]).
  std::vector<std::uintptr_t> gone{graph};
  while (!gone.empty()) {
    const std::uintptr_t g = gone.back();
    gone.pop_back();
    std::erase_if(node_sites_, [&](const auto& entry) { return entry.second.graph == g; });
    std::erase_if(alloc_nodes_, [&](const auto& entry) { return entry.first.first == g; });
    std::erase_if(conditionals_, [&](const auto& entry) {
      if (entry.second.graph != g) return false;
      gone.insert(gone.end(), entry.second.bodies.begin(), entry.second.bodies.end());
      return true;
    });
  }
}

// Note [Where graph nodes were made]
// A graph node's report names the call that made it: cudaGraphAdd*Node
// returns the node's handle, and instantiation finds the handle again among
// the graph's nodes. Handles are reused once their graph is destroyed, so an
// entry also names its graph, is dropped with it, and is used only for that
// graph.
// A captured call (a launch, copy, memset, host function on a capturing
// stream) returns no handle, but right after it the stream's capture
// frontier (cuStreamGetCaptureInfo: the nodes the next captured work will
// depend on) is the node it added. Calls that add no node (an event record,
// a wait, which only change the frontier) leave the frontier's nodes as
// they were named before: an entry is never overwritten. The frontier names
// the graph being built; if the capture ends in another handle its entries
// move to it, and if it fails (no graph) they are dropped with it.
void cuda_model::graph_node_added(const call_site& at, std::uintptr_t node, std::uintptr_t graph) {
  if (node == 0 || at.frames.empty()) return;
  const stack_id stack = rec_.intern_stack(at.frames);
  std::lock_guard lock(mutex_);
  node_sites_[node] = node_site{graph, stack};
}

void cuda_model::captured_call_returned(const call_site& at, stream_arg s) {
  if (at.frames.empty()) return;
  const stream_ref on = prepare(s);
  // The driver says whether the stream captures: a stream joins another's
  // capture by waiting for an event recorded in it, which the model does
  // not follow. Asked without the lock (Note [No lock across driver calls]).
  const auto frontier = driver_.capture_frontier_of(on.handle);
  if (!frontier || frontier->graph == 0 || frontier->nodes.empty()) return;
  const stack_id stack = rec_.intern_stack(at.frames);
  model_lock lock(mutex_);
  const stream_id stream = resolve_stream(lock, at, on);
  if (capturing_.contains(raw(stream))) capture_graphs_[raw(stream)] = frontier->graph;
  for (const std::uintptr_t node : frontier->nodes) {
    node_sites_.try_emplace(node, node_site{frontier->graph, stack});
  }
}

void cuda_model::graph_instantiated(const call_site& at, std::uintptr_t exec,
                                    std::uintptr_t graph) {
  const auto described = read_graph(graph);
  const graph_id id = rec_.new_graph_id();
  if (!described) {
    const std::string why = driver_.graph_read_failure();
    std::lock_guard lock(mutex_);
    graph_execs_.create(exec, id);
    emit(at, unmodelled_call{rec_.intern(unreadable("cudaGraphInstantiate", why))});
    emit(at, graph_instantiate{id, {}, {}});
    return;
  }
  // Names are asked before the lock is taken, like every driver answer.
  const auto host_names = host_names_of(*described);
  model_lock lock(mutex_);
  // Note [Graph allocations]: bound before the nodes are described.
  graph_memory memory;
  const auto node_memory = bind_graph_memory_locked(at, *described, graph, memory);
  exec_graph g = describe_exec_locked(lock, at, *described, graph, host_names);
  finish_graph_memory_locked(*described, node_memory, memory, g);
  graph_execs_.create(exec, id);
  if (!memory.empty()) graph_memory_[raw(id)] = std::move(memory);
  // Note [Editing an instantiated graph]
  emit_exec_locked(at, id, exec_graphs_[raw(id)] = std::move(g));
}

void cuda_model::graph_exec_destroyed(std::uintptr_t exec) {
  std::lock_guard lock(mutex_);
  if (const auto id = graph_execs_.destroy(exec)) {
    exec_graphs_.erase(raw(*id));
    graph_memory_.erase(raw(*id));
  }
}

void cuda_model::graph_launched(const call_site& at, std::uintptr_t exec, stream_arg s) {
  const auto measured = take_expected_measured_graph_launch();
  const stream_ref on = prepare(s);
  model_lock lock(mutex_);
  const stream_id stream = resolve_stream(lock, at, on);
  const auto* e = graph_execs_.find(exec);
  if (e == nullptr) {
    emit(at, unmodelled_call{rec_.intern("cudaGraphLaunch (graph instantiated unseen)")});
    return;
  }
  // Note [Measuring graph kernel nodes]
  if (!measured.empty() || any_graph_measured_logged_) [[unlikely]] {
    if (const auto g = exec_graphs_.find(raw(e->id)); g != exec_graphs_.end()) {
      if (!await_graph_measurement_locked(at, e->id, g->second, measured) &&
          g->second.measured_logged) {
        g->second.measured_logged = false;
        emit_exec_locked(at, e->id, g->second);
      }
    }
  }
  // Note [Event nodes]
  emit_event_nodes_locked(at, e->id, stream, graph_node_kind::event_wait);
  emit(at, graph_launch{e->id, stream});
  emit_event_nodes_locked(at, e->id, stream, graph_node_kind::event_record);
  // Note [Graph allocations]
  if (const auto m = graph_memory_.find(raw(e->id)); m != graph_memory_.end()) [[unlikely]] {
    launch_graph_memory_locked(at, stream, m->second);
  }
}

// ---- NVTX ----

void cuda_model::range_pushed(const call_site& at, std::string_view message) {
  std::lock_guard lock(mutex_);
  emit(at, nvtx_push{rec_.intern(message)});
}

void cuda_model::range_popped(const call_site& at) {
  std::lock_guard lock(mutex_);
  emit(at, nvtx_pop{});
}

void cuda_model::marked(const call_site& at, std::string_view message) {
  std::lock_guard lock(mutex_);
  emit(at, nvtx_mark{rec_.intern(message)});
}

// ---- annotations ----

std::optional<access> cuda_model::access_of_locked(const annotated_range& r) const {
  const auto* a = allocations_.find_live(r.address);
  if (a == nullptr) return std::nullopt;  // memory streamsan does not track
  const std::uint64_t offset = r.address - a->base;
  return access{byte_range{a->id, offset, std::min(r.size, a->size - offset)}, r.mode, r.origin};
}

std::vector<access> cuda_model::resolve_annotation_locked(
    std::span<const annotated_range> ranges) {
  std::vector<access> out;
  for (const auto& r : ranges) {
    if (const auto a = access_of_locked(r)) add_access(out, *a);
  }
  return out;
}

void cuda_model::annotate_next_launch(stream_arg s, std::span<const annotated_range> ranges) {
  const stream_ref on = prepare(s);
  model_lock lock(mutex_);
  const stream_id stream = resolve_stream(lock, call_site{}, on);
  annotations_[raw(stream)] = resolve_annotation_locked(ranges);
}

void cuda_model::host_accessed(const call_site& at, std::span<const annotated_range> ranges,
                               std::string_view label) {
  std::lock_guard lock(mutex_);
  concurrency_.host_access_seen();
  // Kept apart and with their origins, as an operator's spans (a strided
  // view's runs in one pinned buffer are not folded into their hull: Note
  // [A span flagged as a hull] in inject/session/torch_entry.cpp).
  std::vector<access> accesses;
  add_op_spans_locked(ranges, accesses);
  if (accesses.empty()) return;
  emit(at, host_access{accesses, rec_.intern(label)});
}

void cuda_model::unmodelled(const call_site& at, std::string_view api) {
  std::lock_guard lock(mutex_);
  emit(at, unmodelled_call{rec_.intern(api)});
}

// Note [Kernel handles die with their module]: no lock, the driver may hold
// its own while it reports the unload.
void cuda_model::modules_unloaded() { modules_unloaded_.fetch_add(1, std::memory_order_acq_rel); }

std::size_t cuda_model::live_allocations() const {
  std::lock_guard lock(mutex_);
  return allocations_.live_count();
}

model_footprint cuda_model::footprint() const {
  std::lock_guard lock(mutex_);
  return model_footprint{streams_.size(),          events_.size(),
                         per_thread_streams_.size(), annotations_.size(),
                         allocations_.live_count(), allocations_.freed_count()};
}

}  // namespace streamsan::injection
