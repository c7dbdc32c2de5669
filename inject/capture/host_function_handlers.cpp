// Host functions and stream callbacks enqueued on a stream.

#include "inject/capture/api_params.h"
#include "inject/capture/api_table.h"

namespace streamsan::injection {
namespace {

void runtime_launch_host_func(api_context& c) {
  const auto& p = c.params<cudaLaunchHostFunc_v10000_params>();
  c.model.host_function_launched(c.here(), c.stream(p.stream), function_handle(p.fn));
}

void runtime_stream_add_callback(api_context& c) {
  const auto& p = c.params<cudaStreamAddCallback_v5000_params>();
  c.model.host_function_launched(c.here(), c.stream(p.stream), function_handle(p.callback));
}

void driver_launch_host_func(api_context& c) {
  const auto& p = c.params<cuLaunchHostFunc_params>();
  c.model.host_function_launched(c.here(), c.stream(p.hStream), function_handle(p.fn));
}

void driver_stream_add_callback(api_context& c) {
  const auto& p = c.params<cuStreamAddCallback_params>();
  c.model.host_function_launched(c.here(), c.stream(p.hStream), function_handle(p.callback));
}

}  // namespace

void add_host_function_handlers(api_tables& t) {
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000,
                 CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_ptsz_v10000},
                {.on_exit = runtime_launch_host_func});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_v5000,
                 CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_ptsz_v7000},
                {.on_exit = runtime_stream_add_callback});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc,
                CUPTI_DRIVER_TRACE_CBID_cuLaunchHostFunc_ptsz},
               {.on_exit = driver_launch_host_func});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback,
                CUPTI_DRIVER_TRACE_CBID_cuStreamAddCallback_ptsz},
               {.on_exit = driver_stream_add_callback});
}

}  // namespace streamsan::injection
