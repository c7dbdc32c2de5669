// Allocations and frees of every kind (frees on entry: Note [Frees and
// destroys on entry]).

#include "inject/capture/api_params.h"
#include "inject/capture/api_table.h"

namespace streamsan::injection {
namespace {

// ---- runtime ----

void runtime_malloc(api_context& c) {
  const auto& p = c.params<cudaMalloc_v3020_params>();
  c.model.allocated(c.here(), address_of(*p.devPtr), p.size, memory_kind::device);
}

void runtime_malloc_pitch(api_context& c) {
  const auto& p = c.params<cudaMallocPitch_v3020_params>();
  c.model.allocated(c.here(), address_of(*p.devPtr), *p.pitch * p.height, memory_kind::device);
}

void runtime_malloc_3d(api_context& c) {
  const auto& p = c.params<cudaMalloc3D_v3020_params>();
  const std::size_t depth = p.extent.depth == 0 ? 1 : p.extent.depth;
  const std::size_t height = p.extent.height == 0 ? 1 : p.extent.height;
  c.model.allocated(c.here(), address_of(p.pitchedDevPtr->ptr),
                    p.pitchedDevPtr->pitch * height * depth, memory_kind::device);
}

void runtime_malloc_host(api_context& c) {
  const auto& p = c.params<cudaMallocHost_v3020_params>();
  c.model.allocated(c.here(), address_of(*p.ptr), p.size, memory_kind::pinned_host);
}

void runtime_host_alloc(api_context& c) {
  const auto& p = c.params<cudaHostAlloc_v3020_params>();
  c.model.allocated(c.here(), address_of(*p.pHost), p.size, memory_kind::pinned_host);
}

void runtime_host_register(api_context& c) {
  const auto& p = c.params<cudaHostRegister_v4000_params>();
  c.model.allocated(c.here(), address_of(p.ptr), p.size, memory_kind::pinned_host);
}

void runtime_malloc_managed(api_context& c) {
  const auto& p = c.params<cudaMallocManaged_v6000_params>();
  c.model.allocated(c.here(), address_of(*p.devPtr), p.size, memory_kind::managed);
}

void runtime_malloc_async(api_context& c) {
  const auto& p = c.params<cudaMallocAsync_v11020_params>();
  c.model.allocated(c.here(), address_of(*p.devPtr), p.size, memory_kind::stream_ordered,
                    c.stream(p.hStream));
}

void runtime_malloc_from_pool_async(api_context& c) {
  const auto& p = c.params<cudaMallocFromPoolAsync_v11020_params>();
  c.model.allocated(c.here(), address_of(*p.ptr), p.size, memory_kind::stream_ordered,
                    c.stream(p.stream));
}

void runtime_free(api_context& c) {
  c.model.freed(c.here(), address_of(c.params<cudaFree_v3020_params>().devPtr),
                free_mode::synchronizing);
}

void runtime_free_host(api_context& c) {
  c.model.freed(c.here(), address_of(c.params<cudaFreeHost_v3020_params>().ptr),
                free_mode::unsynchronized);
}

void runtime_host_unregister(api_context& c) {
  c.model.freed(c.here(), address_of(c.params<cudaHostUnregister_v4000_params>().ptr),
                free_mode::unsynchronized);
}

void runtime_free_async(api_context& c) {
  const auto& p = c.params<cudaFreeAsync_v11020_params>();
  c.model.freed(c.here(), address_of(p.devPtr), free_mode::stream_ordered, c.stream(p.hStream));
}

// ---- driver ----

void driver_mem_alloc(api_context& c) {
  const auto& p = c.params<cuMemAlloc_v2_params>();
  c.model.allocated(c.here(), *p.dptr, p.bytesize, memory_kind::device);
}

void driver_mem_alloc_pitch(api_context& c) {
  const auto& p = c.params<cuMemAllocPitch_v2_params>();
  c.model.allocated(c.here(), *p.dptr, *p.pPitch * p.Height, memory_kind::device);
}

void driver_mem_alloc_host(api_context& c) {
  const auto& p = c.params<cuMemAllocHost_v2_params>();
  c.model.allocated(c.here(), address_of(*p.pp), p.bytesize, memory_kind::pinned_host);
}

void driver_mem_host_alloc(api_context& c) {
  const auto& p = c.params<cuMemHostAlloc_params>();
  c.model.allocated(c.here(), address_of(*p.pp), p.bytesize, memory_kind::pinned_host);
}

void driver_mem_host_register(api_context& c) {
  const auto& p = c.params<cuMemHostRegister_v2_params>();
  c.model.allocated(c.here(), address_of(p.p), p.bytesize, memory_kind::pinned_host);
}

void driver_mem_alloc_managed(api_context& c) {
  const auto& p = c.params<cuMemAllocManaged_params>();
  c.model.allocated(c.here(), *p.dptr, p.bytesize, memory_kind::managed);
}

// cuMemAllocAsync and cuMemAllocFromPoolAsync name their fields alike.
template <class Params>
void driver_mem_alloc_async(api_context& c) {
  const auto& p = c.params<Params>();
  c.model.allocated(c.here(), *p.dptr, p.bytesize, memory_kind::stream_ordered,
                    c.stream(p.hStream));
}

void driver_mem_free(api_context& c) {
  c.model.freed(c.here(), c.params<cuMemFree_v2_params>().dptr, free_mode::synchronizing);
}

void driver_mem_free_host(api_context& c) {
  c.model.freed(c.here(), address_of(c.params<cuMemFreeHost_params>().p),
                free_mode::unsynchronized);
}

void driver_mem_host_unregister(api_context& c) {
  c.model.freed(c.here(), address_of(c.params<cuMemHostUnregister_params>().p),
                free_mode::unsynchronized);
}

void driver_mem_free_async(api_context& c) {
  const auto& p = c.params<cuMemFreeAsync_params>();
  c.model.freed(c.here(), p.dptr, free_mode::stream_ordered, c.stream(p.hStream));
}

void add_runtime_memory_handlers(api_table& t) {
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020}, {.on_exit = runtime_malloc});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020}, {.on_exit = runtime_malloc_pitch});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020}, {.on_exit = runtime_malloc_3d});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020}, {.on_exit = runtime_malloc_host});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020}, {.on_exit = runtime_host_alloc});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000}, {.on_exit = runtime_host_register});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000}, {.on_exit = runtime_malloc_managed});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
         CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020},
        {.on_exit = runtime_malloc_async});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
         CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020},
        {.on_exit = runtime_malloc_from_pool_async});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020}, {.on_entry = runtime_free});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020}, {.on_entry = runtime_free_host});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000},
        {.on_entry = runtime_host_unregister});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
         CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020},
        {.on_entry = runtime_free_async});
}

void add_driver_memory_handlers(api_table& t) {
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2}, {.on_exit = driver_mem_alloc});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2}, {.on_exit = driver_mem_alloc_pitch});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2}, {.on_exit = driver_mem_alloc_host});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc}, {.on_exit = driver_mem_host_alloc});
  // cuMemHostRegister's parameters are those of its _v2.
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister, CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2},
        {.on_exit = driver_mem_host_register});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged}, {.on_exit = driver_mem_alloc_managed});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz},
        {.on_exit = driver_mem_alloc_async<cuMemAllocAsync_params>});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
         CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz},
        {.on_exit = driver_mem_alloc_async<cuMemAllocFromPoolAsync_params>});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2}, {.on_entry = driver_mem_free});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost}, {.on_entry = driver_mem_free_host});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister}, {.on_entry = driver_mem_host_unregister});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz},
        {.on_entry = driver_mem_free_async});
}

}  // namespace

void add_memory_handlers(api_tables& t) {
  add_runtime_memory_handlers(t.runtime);
  add_driver_memory_handlers(t.driver);
}

}  // namespace streamsan::injection
