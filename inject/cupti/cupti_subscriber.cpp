#include "inject/cupti/cupti_subscriber.h"

// cupti.h brings the parameter structs of the runtime and driver callbacks
// (types only: nothing here links the CUDA runtime); NVTX's come separately.
#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtSync.h>
#include <generated_nvtx_meta.h>

#include <array>
#include <stdexcept>
#include <string>

#include "inject/capture/api_classification.h"
#include "inject/model/copy_regions.h"
#include "inject/stack/fast_unwinder.h"
#include "inject/stack/symbol_names.h"

namespace streamsan::injection {
namespace {

// Per host thread: where we are in the CUDA call that is running.
struct thread_state {
  bool busy = false;  // inside streamsan: our own driver calls are not the program's
  std::uint32_t runtime_depth = 0;
  std::uint32_t runtime_cbid = 0;
  bool runtime_launch = false;
  bool launch_modelled = false;
  // The callback being handled (Note [Path cache]); 0 outside callbacks.
  std::uint64_t path_key = 0;
  std::array<std::uint64_t, 64> frames{};
};

thread_local thread_state this_thread;

class busy_guard {
 public:
  busy_guard() noexcept { this_thread.busy = true; }
  busy_guard(const busy_guard&) = delete;
  busy_guard& operator=(const busy_guard&) = delete;
  ~busy_guard() { this_thread.busy = false; }
};

void CUPTIAPI trampoline(void* self, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                         const void* data) {
  if (this_thread.busy) return;
  static_cast<cupti_subscriber*>(self)->on_callback(domain, cbid, data);
}

std::string cupti_error(CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return text ? text : ("CUPTI error " + std::to_string(static_cast<int>(r)));
}

void check(CUptiResult r, const char* what) {
  if (r != CUPTI_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cupti_error(r));
}

template <class P>
const P& params(const void* data) {
  return *static_cast<const P*>(static_cast<const CUpti_CallbackData*>(data)->functionParams);
}

cudaError_t runtime_result(const void* data) {
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  return d->functionReturnValue ? *static_cast<const cudaError_t*>(d->functionReturnValue)
                                : cudaSuccess;
}

CUresult driver_result(const void* data) {
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  return d->functionReturnValue ? *static_cast<const CUresult*>(d->functionReturnValue)
                                : CUDA_SUCCESS;
}

std::uintptr_t h(const void* handle) { return reinterpret_cast<std::uintptr_t>(handle); }
std::uint64_t a(const void* address) { return reinterpret_cast<std::uint64_t>(address); }

// Element size of the cuMemsetD* family (their parameter structs differ only
// in the type of the value, so dstDevice, N/Width/Height and hStream line up).
std::size_t memset_element_size(std::uint32_t cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async_ptsz:
      return 1;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async_ptsz:
      return 2;
    default:
      return 4;
  }
}

bool is_runtime_launch(std::uint32_t cbid) {
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
      return true;
    default:
      return false;
  }
}

// The layout CUPTI gives __cudaLaunchKernel (no struct is published; it
// mirrors the function's parameters like every other params struct).
struct cuda_launch_kernel_params {
  cudaKernel_t kernel;
  dim3 gridDim;
  dim3 blockDim;
  void** args;
  std::size_t sharedMem;
  cudaStream_t stream;
};

// Message text of an NVTX event attribute (ASCII and wide; registered
// strings have no text we can read).
std::string nvtx_message(const nvtxEventAttributes_t* attr) {
  if (attr == nullptr) return {};
  if (attr->messageType == NVTX_MESSAGE_TYPE_ASCII && attr->message.ascii) {
    return attr->message.ascii;
  }
  if (attr->messageType == NVTX_MESSAGE_TYPE_UNICODE && attr->message.unicode) {
    std::string out;
    for (const wchar_t* w = attr->message.unicode; *w; ++w) {
      out.push_back(*w < 0x80 ? static_cast<char>(*w) : '?');
    }
    return out;
  }
  return "<registered string>";
}

template <class P>
const P& nvtx_params(const CUpti_NvtxData* d) {
  return *static_cast<const P*>(d->functionParams);
}

std::string narrow(const wchar_t* w) {
  std::string out;
  for (; w && *w; ++w) out.push_back(*w < 0x80 ? static_cast<char>(*w) : '?');
  return out;
}

}  // namespace

cupti_subscriber::cupti_subscriber(cuda_model& model, unsigned stack_depth)
    : model_(model), stack_depth_(std::min(stack_depth, 64u)) {}

void cupti_subscriber::enable() {
  if (active_.load(std::memory_order_acquire)) return;
  const auto describe = [](CUpti_CallbackDomain domain, std::uint32_t size) {
    std::vector<api_info> info(size);
    for (std::uint32_t cbid = 1; cbid < size; ++cbid) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) {
        continue;
      }
      const std::string_view n = name;
      info[cbid].known = true;
      info[cbid].per_thread =
          n.find("_ptsz") != std::string_view::npos || n.find("_ptds") != std::string_view::npos;
      const api_class c = classify_api(n);
      info[cbid].unmodelled = c == api_class::unmodelled;
      info[cbid].inert = c == api_class::inert;
    }
    return info;
  };
  runtime_info_ = describe(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
  driver_info_ = describe(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);

  // A second call (the first failed half-way) reuses the subscription:
  // CUPTI allows only one subscriber.
  auto subscriber = static_cast<CUpti_SubscriberHandle>(subscriber_);
  if (subscriber == nullptr) {
    check(cuptiSubscribe(&subscriber, trampoline, this), "cuptiSubscribe");
    subscriber_ = subscriber;
  }
  check(cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API), "enabling runtime callbacks");
  check(cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API), "enabling driver callbacks");
  // Of the resource domain only what invalidates kernel handles (the whole
  // domain calls back on every launch).
  check(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                            CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING),
        "enabling module unload callbacks");
  check(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                            CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING),
        "enabling context destroy callbacks");
  // Note [Unmodelled calls are listed, inert calls are not]: no callbacks
  // at all for calls that need nothing.
  for (std::uint32_t cbid = 0; cbid < runtime_info_.size(); ++cbid) {
    if (runtime_info_[cbid].inert) {
      cuptiEnableCallback(0, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
    }
  }
  for (std::uint32_t cbid = 0; cbid < driver_info_.size(); ++cbid) {
    if (driver_info_[cbid].inert) cuptiEnableCallback(0, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  }
  // NVTX callbacks arrive only when NVTX_INJECTION64_PATH leads to CUPTI
  // (streamsan run sets it); failing to enable them is not fatal.
  cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_NVTX);
  active_.store(true, std::memory_order_release);
}

call_site cupti_subscriber::capture(std::uint64_t path_key) const noexcept {
  if (stack_depth_ == 0) return {};
  auto& frames = this_thread.frames;
  const std::size_t n =
      capture_stack(std::span<std::uint64_t>(frames.data(), stack_depth_), path_key);
  return call_site{std::span<const std::uint64_t>(frames.data(), n)};
}

call_site cupti_subscriber::capture_call_site() const noexcept { return capture(0); }

call_site cupti_subscriber::here() const noexcept { return capture(this_thread.path_key); }

void cupti_subscriber::on_callback(std::uint32_t domain, std::uint32_t cbid, const void* data) {
  if (domain < received_.size()) received_[domain].fetch_add(1, std::memory_order_relaxed);
  if (!active_.load(std::memory_order_acquire)) return;
  // Note [Path cache]: one callback site, and for driver calls nested in a
  // runtime call, the runtime call too.
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  const bool has_site = domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API;
  const std::uint64_t nested = domain == CUPTI_CB_DOMAIN_DRIVER_API && this_thread.runtime_depth > 0
                                   ? this_thread.runtime_cbid + 1
                                   : 0;
  this_thread.path_key = ((std::uint64_t{domain} << 56) | (std::uint64_t{cbid} << 32) |
                          (nested << 2) | (has_site ? cb->callbackSite : 0)) + 1;
  try {
    switch (domain) {
      case CUPTI_CB_DOMAIN_RUNTIME_API: on_runtime(cbid, data); break;
      case CUPTI_CB_DOMAIN_DRIVER_API: on_driver(cbid, data); break;
      case CUPTI_CB_DOMAIN_NVTX: on_nvtx(cbid, data); break;
      case CUPTI_CB_DOMAIN_RESOURCE: on_resource(cbid, data); break;
      default: break;
    }
  } catch (...) {
    // Nothing may escape into the driver; a failure to model one call is
    // not worth aborting the program for.
  }
  this_thread.path_key = 0;
}

void cupti_subscriber::count_unmodelled(std::uint32_t domain, std::uint32_t cbid,
                                       const char* name) {
  const auto& table = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_info_ : driver_info_;
  if (cbid >= table.size() || !table[cbid].unmodelled) return;
  busy_guard busy;
  model_.unmodelled(here(), base_api_name(name ? name : "unknown CUDA call"));
}

// ---- runtime API ----

void cupti_subscriber::on_runtime(std::uint32_t cbid, const void* data) {
  auto& t = this_thread;
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  if (d->callbackSite == CUPTI_API_ENTER) {
    if (t.runtime_depth++ > 0) return;
    t.runtime_cbid = cbid;
    t.runtime_launch = is_runtime_launch(cbid);
    t.launch_modelled = false;
    api_calls_.fetch_add(1, std::memory_order_relaxed);
    runtime_entry(cbid, data);
    return;
  }
  // Note [The call that loads the library]: no entry was seen, its driver
  // calls were modelled at the driver level.
  if (t.runtime_depth == 0) return;
  if (--t.runtime_depth > 0) return;
  if (!runtime_exit(cbid, data)) count_unmodelled(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, d->functionName);
  t.runtime_launch = false;
}

bool cupti_subscriber::runtime_entry(std::uint32_t cbid, const void* data) {
  const bool pt = cbid < runtime_info_.size() && runtime_info_[cbid].per_thread;
  busy_guard busy;
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
      model_.freed(here(), a(params<cudaFree_v3020_params>(data).devPtr),
                   free_mode::synchronizing);
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
      model_.freed(here(), a(params<cudaFreeHost_v3020_params>(data).ptr),
                   free_mode::unsynchronized);
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000:
      model_.freed(here(), a(params<cudaHostUnregister_v4000_params>(data).ptr),
                   free_mode::unsynchronized);
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020: {
      const auto& p = params<cudaFreeAsync_v11020_params>(data);
      model_.freed(here(), a(p.devPtr), free_mode::stream_ordered,
                   stream_arg{h(p.hStream), pt});
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050:
      model_.stream_destroyed(here(),
                              h(params<cudaStreamDestroy_v5050_params>(data).stream));
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020:
      model_.event_destroyed(here(),
                             h(params<cudaEventDestroy_v3020_params>(data).event));
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecDestroy_v10000:
      model_.graph_exec_destroyed(h(params<cudaGraphExecDestroy_v10000_params>(data).graphExec));
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphDestroy_v10000:
      model_.graph_destroyed(h(params<cudaGraphDestroy_v10000_params>(data).graph));
      return true;
    default:
      return false;
  }
}

bool cupti_subscriber::runtime_exit(std::uint32_t cbid, const void* data) {
  const bool pt = cbid < runtime_info_.size() && runtime_info_[cbid].per_thread;
  const cudaError_t result = runtime_result(data);
  // Calls handled on entry (frees, destroys) are done.
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecDestroy_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphDestroy_v10000:
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020:
      // A query's outcome is the point: "not ready" is modelled too.
      if (result != cudaSuccess && result != cudaErrorNotReady) return true;
      break;
    default:
      if (result != cudaSuccess) return true;  // failed calls did nothing
      break;
  }
  auto& t = this_thread;
  busy_guard busy;
  const auto at = [&] { return here(); };
  const auto s = [pt](cudaStream_t stream) { return stream_arg{h(stream), pt}; };
  switch (cbid) {
    // ---- streams ----
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020:
      model_.stream_created(at(), h(*params<cudaStreamCreate_v3020_params>(data).pStream), 0, 0);
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithFlags_v5000: {
      const auto& p = params<cudaStreamCreateWithFlags_v5000_params>(data);
      model_.stream_created(at(), h(*p.pStream), p.flags, 0);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithPriority_v5050: {
      const auto& p = params<cudaStreamCreateWithPriority_v5050_params>(data);
      model_.stream_created(at(), h(*p.pStream), p.flags, p.priority);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
      model_.stream_synchronized(at(), s(params<cudaStreamSynchronize_v3020_params>(data).stream));
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000:
      model_.stream_queried(at(), s(params<cudaStreamQuery_v3020_params>(data).stream),
                            result == cudaSuccess);
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020:
      model_.device_synchronized(at());
      return true;

    // ---- events ----
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020:
      model_.event_created(at(), h(*params<cudaEventCreate_v3020_params>(data).event), 0);
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020: {
      const auto& p = params<cudaEventCreateWithFlags_v3020_params>(data);
      model_.event_created(at(), h(*p.event), p.flags);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000: {
      const auto& p = params<cudaEventRecord_v3020_params>(data);
      model_.event_recorded(at(), h(p.event), s(p.stream));
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010: {
      const auto& p = params<cudaEventRecordWithFlags_v11010_params>(data);
      model_.event_recorded(at(), h(p.event), s(p.stream));
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000: {
      const auto& p = params<cudaStreamWaitEvent_v3020_params>(data);
      model_.stream_waited_event(at(), s(p.stream), h(p.event));
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
      model_.event_synchronized(at(), h(params<cudaEventSynchronize_v3020_params>(data).event));
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020:
      model_.event_queried(at(), h(params<cudaEventQuery_v3020_params>(data).event),
                           result == cudaSuccess);
      return true;

    // ---- allocations ----
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
      const auto& p = params<cudaMalloc_v3020_params>(data);
      model_.allocated(at(), a(*p.devPtr), p.size, memory_kind::device);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020: {
      const auto& p = params<cudaMallocPitch_v3020_params>(data);
      model_.allocated(at(), a(*p.devPtr), *p.pitch * p.height, memory_kind::device);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020: {
      const auto& p = params<cudaMalloc3D_v3020_params>(data);
      const std::size_t depth = p.extent.depth == 0 ? 1 : p.extent.depth;
      const std::size_t height = p.extent.height == 0 ? 1 : p.extent.height;
      model_.allocated(at(), a(p.pitchedDevPtr->ptr), p.pitchedDevPtr->pitch * height * depth,
                       memory_kind::device);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
      const auto& p = params<cudaMallocHost_v3020_params>(data);
      model_.allocated(at(), a(*p.ptr), p.size, memory_kind::pinned_host);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
      const auto& p = params<cudaHostAlloc_v3020_params>(data);
      model_.allocated(at(), a(*p.pHost), p.size, memory_kind::pinned_host);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000: {
      const auto& p = params<cudaHostRegister_v4000_params>(data);
      model_.allocated(at(), a(p.ptr), p.size, memory_kind::pinned_host);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
      const auto& p = params<cudaMallocManaged_v6000_params>(data);
      model_.allocated(at(), a(*p.devPtr), p.size, memory_kind::managed);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020: {
      const auto& p = params<cudaMallocAsync_v11020_params>(data);
      model_.allocated(at(), a(*p.devPtr), p.size, memory_kind::stream_ordered, s(p.hStream));
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020: {
      const auto& p = params<cudaMallocFromPoolAsync_v11020_params>(data);
      model_.allocated(at(), a(*p.ptr), p.size, memory_kind::stream_ordered, s(p.stream));
      return true;
    }

    // ---- copies ----
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000: {
      const bool async = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020 ||
                         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000;
      const auto& p = params<cudaMemcpyAsync_v3020_params>(data);  // cudaMemcpy: a prefix of it
      model_.copied(at(), s(async ? p.stream : nullptr),
                    {a(p.dst), p.count, side_of(p.kind, copy_side::destination)},
                    {a(p.src), p.count, side_of(p.kind, copy_side::source)}, async);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000: {
      const bool async = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020 ||
                         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000;
      const auto& p = params<cudaMemcpy2DAsync_v3020_params>(data);
      model_.copied(at(), s(async ? p.stream : nullptr),
                    {a(p.dst), pitched_extent(p.width, p.height, p.dpitch),
                     side_of(p.kind, copy_side::destination)},
                    {a(p.src), pitched_extent(p.width, p.height, p.spitch),
                     side_of(p.kind, copy_side::source)},
                    async);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000: {
      const bool async = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020 ||
                         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000;
      const auto& p = params<cudaMemcpy3DAsync_v3020_params>(data);
      model_.copied(at(), s(async ? p.stream : nullptr), region_of(*p.p, copy_side::destination),
                    region_of(*p.p, copy_side::source), async);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeer_v4000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeer_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_v4000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_ptsz_v7000: {
      const bool async = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_v4000 ||
                         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_ptsz_v7000;
      const auto& p = params<cudaMemcpy3DPeerAsync_v4000_params>(data);
      model_.copied(at(), s(async ? p.stream : nullptr), region_of(*p.p, copy_side::destination),
                    region_of(*p.p, copy_side::source), true);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000: {
      // cudaMemcpyPeer is asynchronous to the host but serialized with the
      // legacy stream of both devices: a copy on the legacy stream.
      const bool async = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000;
      const auto& p = params<cudaMemcpyPeerAsync_v4000_params>(data);
      model_.copied(at(), s(async ? p.stream : nullptr),
                    {a(p.dst), p.count, memory_side::device},
                    {a(p.src), p.count, memory_side::device}, true);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_ptsz_v7000: {
      // A __device__ variable is not an allocation streamsan tracks; the
      // host side and the ordering still count.
      const bool async = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020 ||
                         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_ptsz_v7000;
      const auto& p = params<cudaMemcpyToSymbolAsync_v3020_params>(data);
      model_.copied(at(), s(async ? p.stream : nullptr), {0, p.count, memory_side::device},
                    {a(p.src), p.count, side_of(p.kind, copy_side::source)}, async);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000: {
      const bool async = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020 ||
                         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000;
      const auto& p = params<cudaMemcpyFromSymbolAsync_v3020_params>(data);
      model_.copied(at(), s(async ? p.stream : nullptr),
                    {a(p.dst), p.count, side_of(p.kind, copy_side::destination)},
                    {0, p.count, memory_side::device}, async);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v13000: {
      const auto& p = params<cudaMemcpyBatchAsync_v13000_params>(data);
      const call_site site = at();
      for (std::size_t i = 0; i < p.count; ++i) {
        model_.copied(site, s(p.stream), {a(p.dsts[i]), p.sizes[i], memory_side::unknown},
                      {a(p.srcs[i]), p.sizes[i], memory_side::unknown}, true);
      }
      return true;
    }

    // ---- memsets ----
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000: {
      const bool async = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020 ||
                         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000;
      const auto& p = params<cudaMemsetAsync_v3020_params>(data);
      model_.memset(at(), s(async ? p.stream : nullptr),
                    {a(p.devPtr), p.count, memory_side::unknown}, async);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2D_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_ptsz_v7000: {
      const bool async = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020 ||
                         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_ptsz_v7000;
      const auto& p = params<cudaMemset2DAsync_v3020_params>(data);
      model_.memset(at(), s(async ? p.stream : nullptr),
                    {a(p.devPtr), pitched_extent(p.width, p.height, p.pitch),
                     memory_side::unknown},
                    async);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3D_ptds_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_ptsz_v7000: {
      const bool async = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_v3020 ||
                         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_ptsz_v7000;
      const auto& p = params<cudaMemset3DAsync_v3020_params>(data);
      const auto& ptr = p.pitchedDevPtr;
      const std::size_t rows = ptr.ysize != 0 ? ptr.ysize : p.extent.height;
      model_.memset(at(), s(async ? p.stream : nullptr),
                    {a(ptr.ptr),
                     pitched_extent(p.extent.width, p.extent.height, ptr.pitch, p.extent.depth,
                                    ptr.pitch * rows),
                     memory_side::unknown},
                    async);
      return true;
    }

    // ---- launches (Note [Runtime calls are modelled at the runtime level]) ----
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000: {
      if (t.launch_modelled) return true;
      const auto& p = params<cuda_launch_kernel_params>(data);
      model_.kernel_launched(at(), s(p.stream), h(p.kernel),
                             kernel_arguments::from_pointers(p.args));
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
      if (t.launch_modelled) return true;
      const auto& p = params<cudaLaunchKernel_v7000_params>(data);
      const call_site site = at();
      model_.kernel_launched(site, s(p.stream), 0, {}, function_name(a(p.func)));
      model_.unmodelled(site, "cudaLaunchKernel (kernel parameters not seen)");
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      if (t.launch_modelled) return true;
      const auto& p = params<cudaLaunchKernelExC_v11060_params>(data);
      const call_site site = at();
      model_.kernel_launched(site, s(p.config ? p.config->stream : nullptr), 0, {},
                             function_name(a(p.func)));
      model_.unmodelled(site, "cudaLaunchKernelExC (kernel parameters not seen)");
      return true;
    }

    // ---- host functions ----
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_ptsz_v10000: {
      const auto& p = params<cudaLaunchHostFunc_v10000_params>(data);
      model_.host_function_launched(at(), s(p.stream), h(reinterpret_cast<const void*>(p.fn)));
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_v5000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_ptsz_v7000: {
      const auto& p = params<cudaStreamAddCallback_v5000_params>(data);
      model_.host_function_launched(at(), s(p.stream),
                                    h(reinterpret_cast<const void*>(p.callback)));
      return true;
    }

    // ---- graphs ----
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000:
      model_.capture_began(at(), s(params<cudaStreamBeginCapture_v10000_params>(data).stream));
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030:
      model_.capture_began(at(),
                           s(params<cudaStreamBeginCaptureToGraph_v12030_params>(data).stream));
      return true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000: {
      const auto& p = params<cudaStreamEndCapture_v10000_params>(data);
      model_.capture_ended(at(), s(p.stream), h(p.pGraph ? *p.pGraph : nullptr));
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000: {
      // Every variant starts with (cudaGraphExec_t*, cudaGraph_t).
      const auto& p = params<cudaGraphInstantiateWithFlags_v11040_params>(data);
      model_.graph_instantiated(at(), h(*p.pGraphExec), h(p.graph));
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000: {
      const auto& p = params<cudaGraphLaunch_v10000_params>(data);
      model_.graph_launched(at(), h(p.graphExec), s(p.stream));
      return true;
    }
    default:
      return cbid >= runtime_info_.size() || !runtime_info_[cbid].unmodelled;
  }
}

// ---- driver API ----

void cupti_subscriber::on_driver(std::uint32_t cbid, const void* data) {
  auto& t = this_thread;
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  // Kernel handles die with their module, whoever unloads it.
  if ((cbid == CUPTI_DRIVER_TRACE_CBID_cuModuleUnload ||
       cbid == CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload) &&
      d->callbackSite == CUPTI_API_EXIT) {
    busy_guard busy;
    model_.modules_unloaded();
  }
  if (t.runtime_depth > 0) {
    if (t.runtime_launch && d->callbackSite == CUPTI_API_EXIT) nested_driver_exit(cbid, data);
    return;
  }
  if (d->callbackSite == CUPTI_API_ENTER) {
    api_calls_.fetch_add(1, std::memory_order_relaxed);
    driver_entry(cbid, data);
    return;
  }
  if (!driver_exit(cbid, data)) count_unmodelled(CUPTI_CB_DOMAIN_DRIVER_API, cbid, d->functionName);
}

void cupti_subscriber::nested_driver_exit(std::uint32_t cbid, const void* data) {
  auto& t = this_thread;
  const bool pt = (cbid < driver_info_.size() && driver_info_[cbid].per_thread) ||
                  (t.runtime_cbid < runtime_info_.size() && runtime_info_[t.runtime_cbid].per_thread);
  if (driver_result(data) != CUDA_SUCCESS) return;
  busy_guard busy;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const auto& p = params<cuLaunchKernel_params>(data);
      model_.kernel_launched(here(), stream_arg{h(p.hStream), pt}, h(p.f),
                             kernel_arguments::from_launch(p.kernelParams, p.extra));
      t.launch_modelled = true;
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto& p = params<cuLaunchKernelEx_params>(data);
      model_.kernel_launched(here(),
                             stream_arg{h(p.config ? p.config->hStream : nullptr), pt}, h(p.f),
                             kernel_arguments::from_launch(p.kernelParams, p.extra));
      t.launch_modelled = true;
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      const auto& p = params<cuLaunchCooperativeKernel_params>(data);
      model_.kernel_launched(here(), stream_arg{h(p.hStream), pt}, h(p.f),
                             kernel_arguments::from_launch(p.kernelParams, nullptr));
      t.launch_modelled = true;
      return;
    }
    default:
      return;
  }
}

bool cupti_subscriber::driver_entry(std::uint32_t cbid, const void* data) {
  const bool pt = cbid < driver_info_.size() && driver_info_[cbid].per_thread;
  busy_guard busy;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      model_.freed(here(), params<cuMemFree_v2_params>(data).dptr,
                   free_mode::synchronizing);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      model_.freed(here(), a(params<cuMemFreeHost_params>(data).p),
                   free_mode::unsynchronized);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
      model_.freed(here(), a(params<cuMemHostUnregister_params>(data).p),
                   free_mode::unsynchronized);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz: {
      const auto& p = params<cuMemFreeAsync_params>(data);
      model_.freed(here(), p.dptr, free_mode::stream_ordered,
                   stream_arg{h(p.hStream), pt});
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2:
      model_.stream_destroyed(here(), h(params<cuStreamDestroy_v2_params>(data).hStream));
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuEventDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2:
      model_.event_destroyed(here(), h(params<cuEventDestroy_v2_params>(data).hEvent));
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy:
      model_.graph_exec_destroyed(h(params<cuGraphExecDestroy_params>(data).hGraphExec));
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphDestroy:
      model_.graph_destroyed(h(params<cuGraphDestroy_params>(data).hGraph));
      return true;
    default:
      return false;
  }
}

bool cupti_subscriber::driver_exit(std::uint32_t cbid, const void* data) {
  const bool pt = cbid < driver_info_.size() && driver_info_[cbid].per_thread;
  const CUresult result = driver_result(data);
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuEventDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphDestroy:
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamQuery:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuEventQuery:
      if (result != CUDA_SUCCESS && result != CUDA_ERROR_NOT_READY) return true;
      break;
    default:
      if (result != CUDA_SUCCESS) return true;
      break;
  }
  busy_guard busy;
  const auto at = [&] { return here(); };
  const auto s = [pt](CUstream stream) { return stream_arg{h(stream), pt}; };
  const auto dev = [](CUdeviceptr p, std::size_t n) {
    return memory_region{p, n, memory_side::device};
  };
  const auto host = [](const void* p, std::size_t n) {
    return memory_region{a(p), n, memory_side::host};
  };
  switch (cbid) {
    // ---- streams ----
    case CUPTI_DRIVER_TRACE_CBID_cuStreamCreate: {
      const auto& p = params<cuStreamCreate_params>(data);
      model_.stream_created(at(), h(*p.phStream), p.Flags, 0);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamCreateWithPriority: {
      const auto& p = params<cuStreamCreateWithPriority_params>(data);
      model_.stream_created(at(), h(*p.phStream), p.flags, p.priority);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
      model_.stream_synchronized(at(), s(params<cuStreamSynchronize_params>(data).hStream));
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamQuery:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz:
      model_.stream_queried(at(), s(params<cuStreamQuery_params>(data).hStream),
                            result == CUDA_SUCCESS);
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2:
      model_.device_synchronized(at());
      return true;

    // ---- events ----
    case CUPTI_DRIVER_TRACE_CBID_cuEventCreate: {
      const auto& p = params<cuEventCreate_params>(data);
      model_.event_created(at(), h(*p.phEvent), p.Flags);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz: {
      const auto& p = params<cuEventRecord_params>(data);
      model_.event_recorded(at(), h(p.hEvent), s(p.hStream));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz: {
      const auto& p = params<cuEventRecordWithFlags_params>(data);
      model_.event_recorded(at(), h(p.hEvent), s(p.hStream));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz: {
      const auto& p = params<cuStreamWaitEvent_params>(data);
      model_.stream_waited_event(at(), s(p.hStream), h(p.hEvent));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
      model_.event_synchronized(at(), h(params<cuEventSynchronize_params>(data).hEvent));
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuEventQuery:
      model_.event_queried(at(), h(params<cuEventQuery_params>(data).hEvent),
                           result == CUDA_SUCCESS);
      return true;

    // ---- allocations ----
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      const auto& p = params<cuMemAlloc_v2_params>(data);
      model_.allocated(at(), *p.dptr, p.bytesize, memory_kind::device);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      const auto& p = params<cuMemAllocPitch_v2_params>(data);
      model_.allocated(at(), *p.dptr, *p.pPitch * p.Height, memory_kind::device);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
      const auto& p = params<cuMemAllocHost_v2_params>(data);
      model_.allocated(at(), a(*p.pp), p.bytesize, memory_kind::pinned_host);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
      const auto& p = params<cuMemHostAlloc_params>(data);
      model_.allocated(at(), a(*p.pp), p.bytesize, memory_kind::pinned_host);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2: {
      const auto& p = params<cuMemHostRegister_v2_params>(data);
      model_.allocated(at(), a(p.p), p.bytesize, memory_kind::pinned_host);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      const auto& p = params<cuMemAllocManaged_params>(data);
      model_.allocated(at(), *p.dptr, p.bytesize, memory_kind::managed);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      const auto& p = params<cuMemAllocAsync_params>(data);
      model_.allocated(at(), *p.dptr, p.bytesize, memory_kind::stream_ordered, s(p.hStream));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      const auto& p = params<cuMemAllocFromPoolAsync_params>(data);
      model_.allocated(at(), *p.dptr, p.bytesize, memory_kind::stream_ordered, s(p.hStream));
      return true;
    }

    // ---- copies ----
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz: {
      const bool async = cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync ||
                         cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz;
      const auto& p = params<cuMemcpyAsync_params>(data);
      model_.copied(at(), s(async ? p.hStream : nullptr),
                    {p.dst, p.ByteCount, memory_side::unknown},
                    {p.src, p.ByteCount, memory_side::unknown}, async);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz: {
      const bool async = cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2 ||
                         cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz;
      const auto& p = params<cuMemcpyHtoDAsync_v2_params>(data);
      model_.copied(at(), s(async ? p.hStream : nullptr), dev(p.dstDevice, p.ByteCount),
                    host(p.srcHost, p.ByteCount), async);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz: {
      const bool async = cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2 ||
                         cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz;
      const auto& p = params<cuMemcpyDtoHAsync_v2_params>(data);
      model_.copied(at(), s(async ? p.hStream : nullptr), host(p.dstHost, p.ByteCount),
                    dev(p.srcDevice, p.ByteCount), async);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz: {
      const bool async = cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2 ||
                         cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz;
      const auto& p = params<cuMemcpyDtoDAsync_v2_params>(data);
      model_.copied(at(), s(async ? p.hStream : nullptr), dev(p.dstDevice, p.ByteCount),
                    dev(p.srcDevice, p.ByteCount), async);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2D_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DUnaligned_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2_ptsz: {
      const bool async = cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2 ||
                         cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2_ptsz;
      const auto& p = params<cuMemcpy2DAsync_v2_params>(data);
      model_.copied(at(), s(async ? p.hStream : nullptr),
                    region_of(*p.pCopy, copy_side::destination),
                    region_of(*p.pCopy, copy_side::source), async);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3D_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2_ptsz: {
      const bool async = cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2 ||
                         cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2_ptsz;
      const auto& p = params<cuMemcpy3DAsync_v2_params>(data);
      model_.copied(at(), s(async ? p.hStream : nullptr),
                    region_of(*p.pCopy, copy_side::destination),
                    region_of(*p.pCopy, copy_side::source), async);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz: {
      const bool async = cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync ||
                         cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz;
      const auto& p = params<cuMemcpyPeerAsync_params>(data);
      model_.copied(at(), s(async ? p.hStream : nullptr), dev(p.dstDevice, p.ByteCount),
                    dev(p.srcDevice, p.ByteCount), true);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeer:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeer_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync_ptsz: {
      const bool async = cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync ||
                         cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync_ptsz;
      const auto& p = params<cuMemcpy3DPeerAsync_params>(data);
      model_.copied(at(), s(async ? p.hStream : nullptr),
                    region_of(*p.pCopy, copy_side::destination),
                    region_of(*p.pCopy, copy_side::source), true);
      return true;
    }

    // ---- memsets (N elements of 1, 2 or 4 bytes) ----
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds: {
      const auto& p = params<cuMemsetD32_v2_params>(data);
      const std::size_t elem = memset_element_size(cbid);
      model_.memset(at(), s(nullptr), {p.dstDevice, p.N * elem, memory_side::unknown}, false);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz: {
      const auto& p = params<cuMemsetD32Async_params>(data);
      const std::size_t elem = memset_element_size(cbid);
      model_.memset(at(), s(p.hStream), {p.dstDevice, p.N * elem, memory_side::unknown}, true);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16_v2_ptds:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32_v2_ptds: {
      const auto& p = params<cuMemsetD2D32_v2_params>(data);
      const std::size_t elem = memset_element_size(cbid);
      model_.memset(at(), s(nullptr),
                    {p.dstDevice, pitched_extent(p.Width * elem, p.Height, p.dstPitch),
                     memory_side::unknown},
                    false);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async_ptsz: {
      const auto& p = params<cuMemsetD2D32Async_params>(data);
      const std::size_t elem = memset_element_size(cbid);
      model_.memset(at(), s(p.hStream),
                    {p.dstDevice, pitched_extent(p.Width * elem, p.Height, p.dstPitch),
                     memory_side::unknown},
                    true);
      return true;
    }

    // ---- launches ----
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const auto& p = params<cuLaunchKernel_params>(data);
      model_.kernel_launched(at(), s(p.hStream), h(p.f), kernel_arguments::from_launch(p.kernelParams, p.extra));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto& p = params<cuLaunchKernelEx_params>(data);
      model_.kernel_launched(at(), s(p.config ? p.config->hStream : nullptr), h(p.f),
                             kernel_arguments::from_launch(p.kernelParams, p.extra));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      const auto& p = params<cuLaunchCooperativeKernel_params>(data);
      model_.kernel_launched(at(), s(p.hStream), h(p.f), kernel_arguments::from_launch(p.kernelParams, nullptr));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz: {
      const auto& p = params<cuLaunchHostFunc_params>(data);
      model_.host_function_launched(at(), s(p.hStream), h(reinterpret_cast<const void*>(p.fn)));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback_ptsz: {
      const auto& p = params<cuStreamAddCallback_params>(data);
      model_.host_function_launched(at(), s(p.hStream),
                                    h(reinterpret_cast<const void*>(p.callback)));
      return true;
    }

    // ---- graphs ----
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz:
      // Every variant starts with the stream.
      model_.capture_began(at(), s(params<cuStreamBeginCapture_params>(data).hStream));
      return true;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz: {
      const auto& p = params<cuStreamEndCapture_params>(data);
      model_.capture_ended(at(), s(p.hStream), h(p.phGraph ? *p.phGraph : nullptr));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz: {
      // Every variant starts with (CUgraphExec*, CUgraph).
      const auto& p = params<cuGraphInstantiateWithFlags_params>(data);
      model_.graph_instantiated(at(), h(*p.phGraphExec), h(p.hGraph));
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
      const auto& p = params<cuGraphLaunch_params>(data);
      model_.graph_launched(at(), h(p.hGraph), s(p.hStream));
      return true;
    }
    default:
      return cbid >= driver_info_.size() || !driver_info_[cbid].unmodelled;
  }
}

// ---- NVTX and resources ----

void cupti_subscriber::on_nvtx(std::uint32_t cbid, const void* data) {
  const auto* d = static_cast<const CUpti_NvtxData*>(data);
  busy_guard busy;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      model_.range_pushed(here(), nvtx_params<nvtxRangePushA_params>(d).message);
      return;
    case CUPTI_CBID_NVTX_nvtxRangePushW:
      model_.range_pushed(here(), narrow(nvtx_params<nvtxRangePushW_params>(d).message));
      return;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      model_.range_pushed(here(),
                          nvtx_message(nvtx_params<nvtxRangePushEx_params>(d).eventAttrib));
      return;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      model_.range_pushed(here(),
                          nvtx_message(nvtx_params<nvtxDomainRangePushEx_params>(d).core.eventAttrib));
      return;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      model_.range_popped(here());
      return;
    case CUPTI_CBID_NVTX_nvtxMarkA:
      model_.marked(here(), nvtx_params<nvtxMarkA_params>(d).message);
      return;
    case CUPTI_CBID_NVTX_nvtxMarkW:
      model_.marked(here(), narrow(nvtx_params<nvtxMarkW_params>(d).message));
      return;
    case CUPTI_CBID_NVTX_nvtxMarkEx:
      model_.marked(here(), nvtx_message(nvtx_params<nvtxMarkEx_params>(d).eventAttrib));
      return;
    case CUPTI_CBID_NVTX_nvtxDomainMarkEx:
      model_.marked(here(),
                    nvtx_message(nvtx_params<nvtxDomainMarkEx_params>(d).core.eventAttrib));
      return;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
    case CUPTI_CBID_NVTX_nvtxRangeStartW:
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
      // Start/end ranges are not nested: not representable as push/pop.
      model_.unmodelled(here(), d->functionName ? d->functionName : "nvtxRange");
      return;
    default:
      return;  // naming, domains, sync objects: nothing to order
  }
}

void cupti_subscriber::on_resource(std::uint32_t cbid, const void*) {
  if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING ||
      cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    busy_guard busy;
    model_.modules_unloaded();
  }
}

}  // namespace streamsan::injection
