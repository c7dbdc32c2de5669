// Streams: create, destroy, synchronize, query; device synchronize.

#include "inject/capture/api_params.h"
#include "inject/capture/api_table.h"

namespace streamsan::injection {
namespace {

// ---- runtime ----

void runtime_stream_create(api_context& c) {
  const auto& p = c.params<cudaStreamCreate_v3020_params>();
  c.model.stream_created(c.here(), handle_of(*p.pStream), 0, 0);
}

void runtime_stream_create_with_flags(api_context& c) {
  const auto& p = c.params<cudaStreamCreateWithFlags_v5000_params>();
  c.model.stream_created(c.here(), handle_of(*p.pStream), p.flags, 0);
}

void runtime_stream_create_with_priority(api_context& c) {
  const auto& p = c.params<cudaStreamCreateWithPriority_v5050_params>();
  c.model.stream_created(c.here(), handle_of(*p.pStream), p.flags, p.priority);
}

void runtime_stream_destroy(api_context& c) {
  c.model.stream_destroyed(c.here(), handle_of(c.params<cudaStreamDestroy_v5050_params>().stream));
}

void runtime_stream_synchronize(api_context& c) {
  c.model.stream_synchronized(c.here(),
                              c.stream(c.params<cudaStreamSynchronize_v3020_params>().stream));
}

void runtime_stream_query(api_context& c) {
  c.model.stream_queried(c.here(), c.stream(c.params<cudaStreamQuery_v3020_params>().stream),
                         c.completed());
}

// ---- driver ----

void driver_stream_create(api_context& c) {
  const auto& p = c.params<cuStreamCreate_params>();
  c.model.stream_created(c.here(), handle_of(*p.phStream), p.Flags, 0);
}

void driver_stream_create_with_priority(api_context& c) {
  const auto& p = c.params<cuStreamCreateWithPriority_params>();
  c.model.stream_created(c.here(), handle_of(*p.phStream), p.flags, p.priority);
}

void driver_stream_destroy(api_context& c) {
  c.model.stream_destroyed(c.here(), handle_of(c.params<cuStreamDestroy_v2_params>().hStream));
}

void driver_stream_synchronize(api_context& c) {
  c.model.stream_synchronized(c.here(), c.stream(c.params<cuStreamSynchronize_params>().hStream));
}

// cuDevicePrimaryCtxReset names its device (Note [Device reset]).
void driver_primary_context_reset(api_context& c) {
  c.model.device_reset(c.here(), static_cast<std::int32_t>(c.params<cuDevicePrimaryCtxReset_v2_params>().dev));
}

void driver_stream_query(api_context& c) {
  c.model.stream_queried(c.here(), c.stream(c.params<cuStreamQuery_params>().hStream),
                         c.completed());
}

// ---- both ----

void device_synchronize(api_context& c) { c.model.device_synchronized(c.here()); }
void device_reset(api_context& c) { c.model.device_reset(c.here()); }

}  // namespace

void add_stream_handlers(api_tables& t) {
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020},
                {.on_exit = runtime_stream_create});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithFlags_v5000},
                {.on_exit = runtime_stream_create_with_flags});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithPriority_v5050},
                {.on_exit = runtime_stream_create_with_priority});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v3020,
                 CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050},
                {.on_entry = runtime_stream_destroy});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                 CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000},
                {.on_exit = runtime_stream_synchronize});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020,
                 CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000},
                {.on_exit = runtime_stream_query, .answers_not_ready = true});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
                 CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020},
                {.on_exit = device_synchronize});
  // Note [Device reset]
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaDeviceReset_v3020,
                 CUPTI_RUNTIME_TRACE_CBID_cudaThreadExit_v3020},
                {.on_exit = device_reset});

  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuStreamCreate}, {.on_exit = driver_stream_create});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuStreamCreateWithPriority},
               {.on_exit = driver_stream_create_with_priority});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy, CUPTI_DRIVER_TRACE_CBID_cuStreamDestroy_v2},
               {.on_entry = driver_stream_destroy});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
                CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz},
               {.on_exit = driver_stream_synchronize});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuStreamQuery, CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz},
               {.on_exit = driver_stream_query, .answers_not_ready = true});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2},
               {.on_exit = device_synchronize});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset,
                CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2},
               {.on_exit = driver_primary_context_reset});
}

}  // namespace streamsan::injection
