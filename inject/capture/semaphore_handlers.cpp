// External semaphores: signals and waits on a stream (Note [External
// semaphores]). Importing and destroying a semaphore are inert: the model
// keeps no state per semaphore.

#include "inject/capture/api_params.h"
#include "inject/capture/api_table.h"

namespace streamsan::injection {
namespace {

// Every variant (runtime v10000, v11020, _ptsz; driver, _ptsz) is
// (semaphores, parameters, count, stream); only the stream is read, so the
// v10000 entry points, whose parameter arrays are of an older struct, share
// the v11020 layout.
template <class Params>
void signalled(api_context& c) {
  const auto& p = c.params<Params>();
  if (p.numExtSems == 0) return;
  c.model.semaphores_signalled(c.here(), c.stream(p.stream));
}

template <class Params>
void waited(api_context& c) {
  const auto& p = c.params<Params>();
  if (p.numExtSems == 0) return;
  c.model.semaphores_waited(c.here(), c.stream(p.stream));
}

}  // namespace

void add_semaphore_handlers(api_tables& t) {
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaSignalExternalSemaphoresAsync_v10000,
                 CUPTI_RUNTIME_TRACE_CBID_cudaSignalExternalSemaphoresAsync_ptsz_v10000,
                 CUPTI_RUNTIME_TRACE_CBID_cudaSignalExternalSemaphoresAsync_v11020,
                 CUPTI_RUNTIME_TRACE_CBID_cudaSignalExternalSemaphoresAsync_ptsz_v11020},
                {.on_exit = signalled<cudaSignalExternalSemaphoresAsync_v11020_params>});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaWaitExternalSemaphoresAsync_v10000,
                 CUPTI_RUNTIME_TRACE_CBID_cudaWaitExternalSemaphoresAsync_ptsz_v10000,
                 CUPTI_RUNTIME_TRACE_CBID_cudaWaitExternalSemaphoresAsync_v11020,
                 CUPTI_RUNTIME_TRACE_CBID_cudaWaitExternalSemaphoresAsync_ptsz_v11020},
                {.on_exit = waited<cudaWaitExternalSemaphoresAsync_v11020_params>});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuSignalExternalSemaphoresAsync,
                CUPTI_DRIVER_TRACE_CBID_cuSignalExternalSemaphoresAsync_ptsz},
               {.on_exit = signalled<cuSignalExternalSemaphoresAsync_params>});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuWaitExternalSemaphoresAsync,
                CUPTI_DRIVER_TRACE_CBID_cuWaitExternalSemaphoresAsync_ptsz},
               {.on_exit = waited<cuWaitExternalSemaphoresAsync_params>});
}

}  // namespace streamsan::injection
