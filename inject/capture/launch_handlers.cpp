// Kernel launches (Note [Runtime calls are modelled at the runtime level]),
// and the module unloads that retire kernel handles.

#include <algorithm>

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

// Note [Kernels that synchronize on the device] (sanitizer/engine): a
// cooperative launch is one the engine may trust to wait on the device for
// another device's cooperative launch, so the flag travels with the launch.
template <class Config, class Predicate>
bool any_attribute(const Config* config, Predicate matches) noexcept {
  if (config == nullptr || config->attrs == nullptr) return false;
  return std::any_of(config->attrs, config->attrs + config->numAttrs, matches);
}

bool cooperative(const CUlaunchConfig* config) noexcept {
  return any_attribute(config, [](const CUlaunchAttribute& a) {
    return a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && a.value.cooperative != 0;
  });
}

bool cooperative(const cudaLaunchConfig_t* config) noexcept {
  return any_attribute(config, [](const cudaLaunchAttribute& a) {
    return a.id == cudaLaunchAttributeCooperative && a.val.cooperative != 0;
  });
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
  c.model.kernel_launched(site, c.stream(p.config ? p.config->stream : nullptr), 0, {},
                          function_name(address_of(p.func)), cooperative(p.config));
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
  c.model.kernel_launched(c.here(), c.stream(p.config ? p.config->hStream : nullptr),
                          handle_of(p.f), kernel_arguments::from_launch(p.kernelParams, p.extra),
                          {}, cooperative(p.config));
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
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
        if (call.params == nullptr) return {};
        return {call_role::graph_launch,
                static_cast<const cudaGraphLaunch_v10000_params*>(call.params)->stream};
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
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      if (call.params == nullptr) return {};
      return {call_role::graph_launch, static_cast<const cuGraphLaunch_params*>(call.params)->hStream};
    case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2:
      if (call.params == nullptr) return {};
      return {call_role::stream_destroy,
              static_cast<const cuStreamDestroy_v2_params*>(call.params)->hStream};
    default:
      return {};
  }
}

void add_launch_handlers(api_tables& t) {
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                 CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000},
                {.on_exit = runtime_launch_kernel_handle, .kernel_launch = true});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000},
                {.on_exit = runtime_launch_kernel, .kernel_launch = true});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060},
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
