// Virtual memory management of the driver API and IPC memory and event
// handles (Notes [Virtual memory management], [IPC memory handles], [IPC
// events]). Ends of memory are modelled on entry (Note [Frees and destroys
// on entry]), except cuMemAddressFree: a reservation still mapped is not
// documented to unmap, so only a successful call ends what is left in it.

#include "inject/capture/api_params.h"
#include "inject/capture/api_table.h"

namespace streamsan::injection {
namespace {

// ---- virtual memory management (driver only) ----

void mem_create(api_context& c) {
  const auto& p = c.params<cuMemCreate_params>();
  if (p.handle == nullptr) return;
  memory_kind kind = memory_kind::device;
  std::optional<std::int32_t> device;
  if (p.prop != nullptr) {
    switch (p.prop->location.type) {
      case CU_MEM_LOCATION_TYPE_DEVICE:
        device = p.prop->location.id;
        break;
      case CU_MEM_LOCATION_TYPE_HOST:
      case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        kind = memory_kind::pinned_host;
        break;
      case CU_MEM_LOCATION_TYPE_INVALID:  // also _NONE: the current device's
      case CU_MEM_LOCATION_TYPE_MAX:
        break;
    }
  }
  c.model.physical_created(c.here(), *p.handle, p.size, kind, device);
}

void mem_release(api_context& c) {
  c.model.physical_released(c.here(), c.params<cuMemRelease_params>().handle);
}

void mem_retain_allocation_handle(api_context& c) {
  const auto& p = c.params<cuMemRetainAllocationHandle_params>();
  if (p.handle == nullptr) return;
  c.model.physical_retained(c.here(), *p.handle, address_of(p.addr));
}

void mem_map(api_context& c) {
  const auto& p = c.params<cuMemMap_params>();
  c.model.mapped(c.here(), p.ptr, p.size, p.offset, p.handle);
}

void mem_unmap(api_context& c) {
  const auto& p = c.params<cuMemUnmap_params>();
  c.model.unmapped(c.here(), p.ptr, p.size);
}

void mem_address_free(api_context& c) {
  const auto& p = c.params<cuMemAddressFree_params>();
  c.model.unmapped(c.here(), p.ptr, p.size);
}

// ---- IPC ----

void runtime_ipc_open_mem_handle(api_context& c) {
  const auto& p = c.params<cudaIpcOpenMemHandle_v4010_params>();
  if (p.devPtr == nullptr) return;
  c.model.ipc_memory_opened(c.here(), address_of(*p.devPtr), "cudaIpcOpenMemHandle");
}

void runtime_ipc_close_mem_handle(api_context& c) {
  c.model.ipc_memory_closed(c.here(),
                            address_of(c.params<cudaIpcCloseMemHandle_v4010_params>().devPtr));
}

void runtime_ipc_open_event_handle(api_context& c) {
  const auto& p = c.params<cudaIpcOpenEventHandle_v4010_params>();
  if (p.event == nullptr) return;
  c.model.ipc_event_opened(c.here(), handle_of(*p.event));
}

// cuIpcOpenMemHandle and its _v2 take the same parameters.
void driver_ipc_open_mem_handle(api_context& c) {
  const auto& p = c.params<cuIpcOpenMemHandle_v2_params>();
  if (p.pdptr == nullptr) return;
  c.model.ipc_memory_opened(c.here(), *p.pdptr, "cuIpcOpenMemHandle");
}

void driver_ipc_close_mem_handle(api_context& c) {
  c.model.ipc_memory_closed(c.here(), c.params<cuIpcCloseMemHandle_params>().dptr);
}

void driver_ipc_open_event_handle(api_context& c) {
  const auto& p = c.params<cuIpcOpenEventHandle_params>();
  if (p.phEvent == nullptr) return;
  c.model.ipc_event_opened(c.here(), handle_of(*p.phEvent));
}

}  // namespace

void add_vmm_handlers(api_tables& t) {
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuMemCreate}, {.on_exit = mem_create});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuMemRelease}, {.on_entry = mem_release});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuMemRetainAllocationHandle},
               {.on_exit = mem_retain_allocation_handle});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuMemMap}, {.on_exit = mem_map});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuMemUnmap}, {.on_entry = mem_unmap});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree}, {.on_exit = mem_address_free});

  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaIpcOpenMemHandle_v4010},
                {.on_exit = runtime_ipc_open_mem_handle});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaIpcCloseMemHandle_v4010},
                {.on_entry = runtime_ipc_close_mem_handle});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaIpcOpenEventHandle_v4010},
                {.on_exit = runtime_ipc_open_event_handle});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle,
                CUPTI_DRIVER_TRACE_CBID_cuIpcOpenMemHandle_v2},
               {.on_exit = driver_ipc_open_mem_handle});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuIpcCloseMemHandle},
               {.on_entry = driver_ipc_close_mem_handle});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuIpcOpenEventHandle},
               {.on_exit = driver_ipc_open_event_handle});
}

}  // namespace streamsan::injection
