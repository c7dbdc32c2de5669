// Kernel launches (Note [Runtime calls are modelled at the runtime level]),
// and the module unloads that retire kernel handles.

#include "inject/capture/api_params.h"
#include "inject/capture/api_table.h"
#include "inject/capture/launch_decoding.h"
#include "inject/stack/symbol_names.h"

namespace streamsan::injection {
namespace {

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

// What a launch's attributes change for the model: the cooperative flag
// (Note [Kernels that synchronize on the device] in sanitizer/engine: a
// cooperative launch may wait on the device for another device's
// cooperative launch, so the flag travels with the launch) and the events
// the launch records (Note [Programmatic dependent launch]).
//
// Note [Programmatic dependent launch]
// Three launch attributes of cudaLaunchKernelEx / cuLaunchKernelEx bear on
// ordering; what each promises happens on the device, where API capture
// cannot see it, so each is modelled so that it can only hide races, never
// invent one:
// - Programmatic stream serialization: the kernel may begin before the
//   work before it on its stream has completed, once every block of that
//   work has called cudaTriggerProgrammaticLaunchCompletion (or exited); it
//   must call cudaGridDependencySynchronize before it touches what that work
//   wrote. Neither device call is visible, so the stream keeps its order:
//   the kernel is after the previous work. Missed: the races of the PDL
//   window, a kernel that touches the previous kernel's data before its
//   cudaGridDependencySynchronize, or a previous kernel that writes after
//   its trigger what the next one reads.
// - Programmatic event (cudaLaunchAttributeProgrammaticEvent): the event
//   fires once every block has triggered or exited, before the kernel is
//   done. Without this model a cudaStreamWaitEvent on it would be a wait on
//   a never-recorded event (an unrecorded-event report, wrong). It is taken
//   as recorded on the kernel's stream right after the kernel: a waiter is
//   ordered after the whole kernel. Missed: races between the waiter's work
//   and what the kernel does after its blocks triggered.
// - Launch-completion event (cudaLaunchAttributeLaunchCompletionEvent):
//   fires once every block has begun; it orders nothing about memory. The
//   same conservative record after the kernel: every race between the
//   kernel and a waiter's work is missed.
// Captured, these launches become programmatic edges of the graph, which
// instantiation reads as full dependencies (the same choice).
struct launch_facts {
  bool cooperative = false;
  std::uintptr_t programmatic_event = 0;
  std::uintptr_t completion_event = 0;
};

// The attributes of a driver or runtime launch configuration, each applied
// to the facts by `apply`.
template <class Config, class Apply>
launch_facts facts_of(const Config* config, Apply apply) noexcept {
  launch_facts f;
  if (config == nullptr || config->attrs == nullptr) return f;
  for (unsigned i = 0; i < config->numAttrs; ++i) apply(config->attrs[i], f);
  return f;
}

launch_facts facts_of(const CUlaunchConfig* config) noexcept {
  return facts_of(config, [](const CUlaunchAttribute& a, launch_facts& f) {
    if (a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) f.cooperative = a.value.cooperative != 0;
    if (a.id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT) {
      f.programmatic_event = handle_of(a.value.programmaticEvent.event);
    }
    if (a.id == CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT) {
      f.completion_event = handle_of(a.value.launchCompletionEvent.event);
    }
  });
}

launch_facts facts_of(const cudaLaunchConfig_t* config) noexcept {
  return facts_of(config, [](const cudaLaunchAttribute& a, launch_facts& f) {
    if (a.id == cudaLaunchAttributeCooperative) f.cooperative = a.val.cooperative != 0;
    if (a.id == cudaLaunchAttributeProgrammaticEvent) {
      f.programmatic_event = handle_of(a.val.programmaticEvent.event);
    }
    if (a.id == cudaLaunchAttributeLaunchCompletionEvent) {
      f.completion_event = handle_of(a.val.launchCompletionEvent.event);
    }
  });
}

// After the launch's record: the events it records (Note [Programmatic
// dependent launch]).
void record_launch_events(api_context& c, const call_site& site, const launch_facts& f,
                          const void* stream) {
  for (const std::uintptr_t event : {f.programmatic_event, f.completion_event}) {
    if (event != 0) c.model.event_recorded(site, event, c.ordering_stream(stream));
  }
}

bool cooperative_runtime_call(std::uint32_t cbid) noexcept {
  return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000 ||
         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000;
}

// ---- runtime: modelled here only when no nested driver launch was ----

void runtime_launch_kernel_handle(api_context& c) {
  if (c.launch_modelled()) return;
  const auto& p = c.params<cuda_launch_kernel_params>();
  c.model.kernel_launched(c.here(), c.stream(p.stream), handle_of(p.kernel),
                          kernel_arguments::from_pointers(p.args));
}

// cudaLaunchKernel and cudaLaunchCooperativeKernel: the kernel by its host
// stub only, so by name and without accesses.
void runtime_launch_kernel(api_context& c) {
  if (c.launch_modelled()) return;
  const auto& p = c.params<cudaLaunchKernel_v7000_params>();
  const call_site site = c.here();
  c.model.kernel_launched(site, c.stream(p.stream), 0, {}, function_name(address_of(p.func)),
                          cooperative_runtime_call(c.call.cbid));
  c.model.unmodelled(site, "cudaLaunchKernel (kernel parameters not seen)");
}

void runtime_launch_kernel_ex(api_context& c) {
  if (c.launch_modelled()) return;
  const auto& p = c.params<cudaLaunchKernelExC_v11060_params>();
  const call_site site = c.here();
  const launch_facts f = facts_of(p.config);
  const void* stream = p.config ? p.config->stream : nullptr;
  c.model.kernel_launched(site, c.stream(stream), 0, {}, function_name(address_of(p.func)),
                          f.cooperative);
  record_launch_events(c, site, f, stream);
  c.model.unmodelled(site, "cudaLaunchKernelExC (kernel parameters not seen)");
}

// ---- driver: also inside a runtime launch ----

void driver_launch_kernel(api_context& c) {
  const auto& p = c.params<cuLaunchKernel_params>();
  c.model.kernel_launched(c.here(), c.stream(p.hStream), handle_of(p.f),
                          kernel_arguments::from_launch(p.kernelParams, p.extra));
  c.set_launch_modelled();
}

void driver_launch_kernel_ex(api_context& c) {
  const auto& p = c.params<cuLaunchKernelEx_params>();
  const call_site site = c.here();
  const launch_facts f = facts_of(p.config);
  const void* stream = p.config ? p.config->hStream : nullptr;
  c.model.kernel_launched(site, c.stream(stream), handle_of(p.f),
                          kernel_arguments::from_launch(p.kernelParams, p.extra), {},
                          f.cooperative);
  record_launch_events(c, site, f, stream);
  c.set_launch_modelled();
}

void driver_launch_cooperative_kernel(api_context& c) {
  const auto& p = c.params<cuLaunchCooperativeKernel_params>();
  c.model.kernel_launched(c.here(), c.stream(p.hStream), handle_of(p.f),
                          kernel_arguments::from_launch(p.kernelParams, nullptr), {},
                          /*cooperative=*/true);
  c.set_launch_modelled();
}

void modules_unloaded(api_context& c) { c.model.modules_unloaded(); }

}  // namespace

std::optional<launch_request> decode_launch(const api_call& call) noexcept {
  if (call.params == nullptr) return std::nullopt;
  const auto request = [](const void* kernel, void* const* params, void* const* extra,
                          const void* stream) {
    return launch_request{handle_of(kernel), kernel_arguments::from_launch(params, extra), stream};
  };
  if (call.domain == api_domain::runtime) {
    switch (call.cbid) {
      case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
      case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000: {
        const auto& p = *static_cast<const cuda_launch_kernel_params*>(call.params);
        return request(p.kernel, p.args, nullptr, p.stream);
      }
      default:
        return std::nullopt;
    }
  }
  switch (call.cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const auto& p = *static_cast<const cuLaunchKernel_params*>(call.params);
      return request(p.f, p.kernelParams, p.extra, p.hStream);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto& p = *static_cast<const cuLaunchKernelEx_params*>(call.params);
      return request(p.f, p.kernelParams, p.extra, p.config ? p.config->hStream : nullptr);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      const auto& p = *static_cast<const cuLaunchCooperativeKernel_params*>(call.params);
      return request(p.f, p.kernelParams, nullptr, p.hStream);
    }
    default:
      return std::nullopt;
  }
}

call_facts decode_call_role(const api_call& call) noexcept {
  if (call.domain == api_domain::runtime) {
    switch (call.cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020:
        return {call_role::context_synchronize};
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
        return {call_role::host_wait};
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
        if (call.params == nullptr) return {};
        return {call_role::graph_launch,
                static_cast<const cudaGraphLaunch_v10000_params*>(call.params)->stream,
                static_cast<const cudaGraphLaunch_v10000_params*>(call.params)->graphExec};
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000:
        return {call_role::graph_instantiate};
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecDestroy_v10000:
        if (call.params == nullptr) return {};
        return {call_role::graph_exec_destroy, nullptr,
                static_cast<const cudaGraphExecDestroy_v10000_params*>(call.params)->graphExec};
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050:
        if (call.params == nullptr) return {};
        return {call_role::stream_destroy,
                static_cast<const cudaStreamDestroy_v5050_params*>(call.params)->stream};
      default:
        return {};
    }
  }
  switch (call.cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2:
      return {call_role::context_synchronize};
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
      return {call_role::host_wait};
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      if (call.params == nullptr) return {};
      return {call_role::graph_launch, static_cast<const cuGraphLaunch_params*>(call.params)->hStream,
              static_cast<const cuGraphLaunch_params*>(call.params)->hGraph};
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz:
      return {call_role::graph_instantiate};
    case CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy:
      if (call.params == nullptr) return {};
      return {call_role::graph_exec_destroy, nullptr,
              static_cast<const cuGraphExecDestroy_params*>(call.params)->hGraphExec};
    case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2:
      if (call.params == nullptr) return {};
      return {call_role::stream_destroy,
              static_cast<const cuStreamDestroy_v2_params*>(call.params)->hStream};
    // Note [No module change while a module loads]: loads and unloads, the
    // getters that put a library's module into a context, and the calls on
    // a function handle that lazy loading makes load its module.
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoad:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleUnload:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleGetGlobal:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleGetGlobal_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetModule:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetGlobal:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetManaged:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryGetUnifiedFunction:
    case CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction:
    case CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute:
    case CUPTI_DRIVER_TRACE_CBID_cuKernelSetAttribute:
    case CUPTI_DRIVER_TRACE_CBID_cuKernelSetCacheConfig:
    case CUPTI_DRIVER_TRACE_CBID_cuFuncGetAttribute:
    case CUPTI_DRIVER_TRACE_CBID_cuFuncSetAttribute:
    case CUPTI_DRIVER_TRACE_CBID_cuFuncSetCacheConfig:
    case CUPTI_DRIVER_TRACE_CBID_cuOccupancyAvailableDynamicSMemPerBlock:
    case CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessor:
    case CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveClusters:
    case CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxPotentialBlockSize:
    case CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxPotentialBlockSizeWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxPotentialClusterSize:
      return {call_role::module_call};
    default:
      return {};
  }
}

void add_launch_handlers(api_tables& t) {
  // Note [Launches without their runtime callback]: <<<>>> on a stream or the
  // legacy stream needs no runtime callback. The _ptsz variant keeps it: its
  // driver launch may be the plain cuLaunchKernel on stream 0, which only
  // the runtime call says is the per-thread default stream.
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000},
                {.on_exit = runtime_launch_kernel_handle,
                 .kernel_launch = true,
                 .modelled_by_driver_call = true});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000},
                {.on_exit = runtime_launch_kernel_handle, .kernel_launch = true});
  // Note [Runtime launch callbacks on request]: the plain ones on request.
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000},
                {.on_exit = runtime_launch_kernel, .kernel_launch = true,
                 .driver_call_suffices = true});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000},
                {.on_exit = runtime_launch_kernel, .kernel_launch = true});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060},
                {.on_exit = runtime_launch_kernel_ex, .kernel_launch = true,
                 .driver_call_suffices = true});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060},
                {.on_exit = runtime_launch_kernel_ex, .kernel_launch = true});

  constexpr auto nested = api_level::in_runtime_launch;
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz},
               {.on_exit = driver_launch_kernel, .level = nested});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz},
               {.on_exit = driver_launch_kernel_ex, .level = nested});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
                CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz},
               {.on_exit = driver_launch_cooperative_kernel, .level = nested});
  // Kernel handles die with their module, whoever unloads it.
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuModuleUnload, CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload},
               {.on_exit = modules_unloaded, .level = api_level::every});
}

}  // namespace streamsan::injection
