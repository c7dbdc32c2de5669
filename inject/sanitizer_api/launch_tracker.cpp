#include "inject/sanitizer_api/launch_tracker.h"

#include <dlfcn.h>

#include <algorithm>
#include <bit>

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
};
thread_local thread_launch this_thread;

template <class F>
bool resolve(void* lib, const char* name, F& slot) {
  slot = reinterpret_cast<F>(dlsym(lib, name));
  return slot != nullptr;
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
                  resolve(lib, "cuStreamIsCapturing", d.stream_is_capturing);
  dlclose(lib);  // RTLD_NOLOAD took a reference; the driver stays loaded
  if (!ok) return std::nullopt;
  return d;
}

launch_tracker::launch_tracker(const sanitizer_library& lib, const tracker_driver& driver,
                               tracker_options options)
    : lib_(lib), driver_(driver), options_(options) {}

extern "C" {
extern const unsigned char streamsan_footprint_patches[];
}

bool launch_tracker::patch_module(CUcontext ctx, CUmodule module, std::string& why) {
  std::lock_guard lock(mutex_);
  if (patched_.count(module) != 0) return true;
  if (contexts_with_patches_.insert(ctx).second) {
    if (const auto r = lib_.add_patches(streamsan_footprint_patches, ctx); r != SANITIZER_SUCCESS) {
      contexts_with_patches_.erase(ctx);
      why = "loading streamsan's patch code: " + lib_.describe(r);
      return false;
    }
  }
  const std::pair<Sanitizer_InstructionId, const char*> patches[] = {
      {SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, "streamsan_global_access"},
      {SANITIZER_INSTRUCTION_MEMCPY_ASYNC, "streamsan_memcpy_async"},
      {SANITIZER_INSTRUCTION_BULK_COPY_GLOBAL_TO_SHARED, "streamsan_bulk_global_to_shared"},
      {SANITIZER_INSTRUCTION_BULK_COPY_SHARED_TO_GLOBAL, "streamsan_bulk_shared_to_global"},
      {SANITIZER_INSTRUCTION_BULK_REDUCTION_SHARED_TO_GLOBAL, "streamsan_bulk_reduction_to_global"},
  };
  for (const auto& [instruction, callback] : patches) {
    if (const auto r = lib_.patch_instructions(instruction, module, callback);
        r != SANITIZER_SUCCESS) {
      why = std::string("patching ") + callback + ": " + lib_.describe(r);
      return false;
    }
  }
  if (const auto r = lib_.patch_module(module); r != SANITIZER_SUCCESS) {
    why = "sanitizerPatchModule: " + lib_.describe(r);
    return false;
  }
  patched_.insert(module);
  ++stats_.modules_patched;
  return true;
}

bool launch_tracker::is_patched(CUmodule module) const {
  std::lock_guard lock(mutex_);
  return patched_.count(module) != 0;
}

bool launch_tracker::unpatch_module(CUmodule module, std::string& why) {
  std::lock_guard lock(mutex_);
  if (patched_.count(module) == 0) return true;
  for (const auto& l : in_flight_) {
    if (l.module == module) return false;
  }
  if (const auto r = lib_.unpatch_module(module); r != SANITIZER_SUCCESS) {
    why = "sanitizerUnpatchModule: " + lib_.describe(r);
    return false;
  }
  patched_.erase(module);
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
  // CUfunction handles of the module may be handed out again.
  slots_hint_.clear();
}

std::optional<launch_tracker::table> launch_tracker::acquire_locked(
    CUcontext ctx, std::uint32_t pages, Sanitizer_StreamHandle stream) {
  auto& pool = free_tables_[{ctx, pages}];
  if (!pool.empty()) {
    table t = pool.back();
    pool.pop_back();
    return t;
  }
  table t;
  t.layout = precise::layout_for(pages);
  t.ctx = ctx;
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
  free_tables_[{t.ctx, t.layout.capacity}].push_back(t);
}

void launch_tracker::launch_begin(const Sanitizer_LaunchData& launch, bool measure,
                                  std::uint32_t slot_estimate) {
  this_thread = thread_launch{};
  std::lock_guard lock(mutex_);
  const bool patched = patched_.count(launch.module) != 0;
  if (!measure || !patched) {
    // A patched module's launches that are not measured get no table.
    if (patched) lib_.set_launch_callback_data(launch.hLaunch, launch.function, launch.hStream, nullptr);
    return;
  }
  const auto hint = slots_hint_.find(launch.function);
  const std::uint32_t learned = hint != slots_hint_.end() ? hint->second : 0;
  std::uint32_t slots = std::max(learned, slot_estimate);
  if (slots == 0) slots = options_.initial_slots;
  slots = std::bit_ceil(std::max<std::uint32_t>(slots, 16));  // few distinct sizes to pool
  auto t = acquire_locked(launch.context, slots, launch.hStream);
  if (!t) {
    ++stats_.failed;
    lib_.set_launch_callback_data(launch.hLaunch, launch.function, launch.hStream, nullptr);
    return;
  }
  // Stream-ordered before the kernel: the buckets and counters start empty.
  auto* base = static_cast<char*>(t->device);
  const bool ok =
      lib_.memset(base + t->layout.cleared_offset, 0,
                  t->layout.cleared_end - t->layout.cleared_offset, launch.hStream) ==
          SANITIZER_SUCCESS &&
      lib_.set_launch_callback_data(launch.hLaunch, launch.function, launch.hStream, t->device) ==
          SANITIZER_SUCCESS;
  if (!ok) {
    ++stats_.failed;
    release_locked(*t);
    lib_.set_launch_callback_data(launch.hLaunch, launch.function, launch.hStream, nullptr);
    return;
  }
  this_thread = thread_launch{true,           false,          launch.function,
                              launch.module,  launch.stream,  launch.context,
                              launch.hStream, t->device,      t->layout};
}

void launch_tracker::launch_end(const Sanitizer_LaunchData& launch) {
  if (this_thread.began && this_thread.function == launch.function) this_thread.ended = true;
}

CUevent launch_tracker::event_locked(CUcontext ctx) {
  if (!free_events_.empty()) {
    CUevent e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  context_scope scope(driver_, ctx);
  CUevent e = nullptr;
  if (driver_.event_create(&e, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return nullptr;
  return e;
}

std::optional<launch_tracker::launch_id> launch_tracker::launched() {
  if (!this_thread.ended) {
    this_thread = thread_launch{};
    return std::nullopt;
  }
  const thread_launch l = this_thread;
  this_thread = thread_launch{};
  std::lock_guard lock(mutex_);
  launch_state s;
  s.id = ++last_id_;
  s.t = table{l.table_device, l.layout, l.ctx};
  s.function = l.function;
  s.module = l.module;
  s.stream = l.stream;
  s.ctx = l.ctx;
  s.done = event_locked(l.ctx);
  if (s.done == nullptr || driver_.event_record(s.done, l.stream) != CUDA_SUCCESS) {
    // Without an event of our own, wait for the launch now (outside the
    // launch callbacks, this is allowed); done == nullptr means completed.
    if (s.done != nullptr) free_events_.push_back(s.done);
    s.done = nullptr;
    lib_.stream_synchronize(l.hstream);
    ++stats_.waits;
  }
  in_flight_bytes_ += s.t.layout.bytes;
  in_flight_.push_back(s);
  in_flight_count_.store(in_flight_.size(), std::memory_order_release);
  return s.id;
}

Sanitizer_StreamHandle launch_tracker::private_stream_locked(CUcontext ctx) {
  if (const auto it = private_streams_.find(ctx); it != private_streams_.end()) {
    return it->second.second;
  }
  context_scope scope(driver_, ctx);
  CUstream s = nullptr;
  Sanitizer_StreamHandle h = nullptr;
  if (driver_.stream_create(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      lib_.stream_handle(ctx, s, &h) != SANITIZER_SUCCESS) {
    h = nullptr;
  }
  private_streams_[ctx] = {s, h};
  return h;
}

precise::decoded_footprint launch_tracker::read_back_locked(launch_state& l) {
  const Sanitizer_StreamHandle via = private_stream_locked(l.ctx);
  const auto fetch = [&](void* dst, std::uint64_t src, std::size_t n) {
    return lib_.memcpy_to_host(dst, reinterpret_cast<void*>(src), n, via) == SANITIZER_SUCCESS;
  };
  auto& hint = slots_hint_[l.function];
  if (hint == 0) hint = l.t.layout.capacity;
  precise::decoded_footprint d;
  try {
    d = precise::decode_footprint(l.t.layout, reinterpret_cast<std::uint64_t>(l.t.device), fetch,
                                  std::min(hint, l.t.layout.capacity));
  } catch (const std::exception&) {
    ++stats_.failed;
    d = precise::decoded_footprint{};
    d.complete = false;
  }
  ++stats_.measured;
  stats_.pages += d.pages;
  stats_.fragmented_pages += d.fragmented_pages;
  stats_.bytes_read_back += d.bytes_read_back;
  if (!d.complete) {
    ++stats_.incomplete;
    hint = std::max(l.t.layout.capacity * 4, d.pages * 2);
  } else {
    hint = std::max<std::uint32_t>(16, d.pages * 2);
  }
  release_locked(l.t);
  if (l.done != nullptr) free_events_.push_back(l.done);
  return d;
}

void launch_tracker::poll(bool wait_all, const footprint_callback& done) {
  // Footprints are handed on outside the lock: the callback feeds the log.
  std::vector<std::pair<launch_id, precise::decoded_footprint>> ready;
  {
    std::lock_guard lock(mutex_);
    while (!in_flight_.empty()) {
      launch_state& head = in_flight_.front();
      if (head.done != nullptr) {
        if (wait_all || in_flight_.size() > options_.max_pending ||
            in_flight_bytes_ > options_.max_pending_bytes) {
          driver_.event_synchronize(head.done);
          ++stats_.waits;
        } else if (driver_.event_query(head.done) != CUDA_SUCCESS) {
          break;
        }
      }
      launch_state l = head;
      in_flight_.pop_front();
      in_flight_count_.store(in_flight_.size(), std::memory_order_release);
      in_flight_bytes_ -= l.t.layout.bytes;
      ready.emplace_back(l.id, read_back_locked(l));
    }
  }
  for (const auto& [id, d] : ready) done(id, d);
}

tracker_stats launch_tracker::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace streamsan::sanitizer_api
