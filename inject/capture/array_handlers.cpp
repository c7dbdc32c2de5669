// CUDA arrays (Note [CUDA arrays]): creation, destruction, and the copies
// that name an array by handle. A copy writes or reads the whole array.

#include <string_view>

#include "inject/capture/api_params.h"
#include "inject/capture/api_table.h"
#include "inject/model/copy_regions.h"

namespace streamsan::injection {
namespace {

std::uint64_t at_least_one(std::size_t n) { return n == 0 ? 1 : n; }

// Bytes per element of a runtime channel format; 0 when not a whole number.
std::uint64_t element_bytes(const cudaChannelFormatDesc* d) {
  if (d == nullptr) return 0;
  const int bits = d->x + d->y + d->z + d->w;
  return bits > 0 && bits % 8 == 0 ? static_cast<std::uint64_t>(bits / 8) : 0;
}

// Bytes per channel of a driver format; 0 for the compressed and planar
// formats, whose size is not elements times channels.
std::uint64_t channel_bytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
  }
}

template <class Desc>
std::uint64_t driver_array_bytes(const Desc* d, std::size_t depth) {
  if (d == nullptr) return 0;
  return channel_bytes(d->Format) * d->NumChannels * at_least_one(d->Width) *
         at_least_one(d->Height) * at_least_one(depth);
}

void created(api_context& c, const void* const* handle, std::uint64_t bytes, std::string_view api) {
  c.model.array_created(c.here(), handle != nullptr ? handle_of(*handle) : 0, bytes, api);
}

// ---- runtime ----

void runtime_malloc_array(api_context& c) {
  const auto& p = c.params<cudaMallocArray_v3020_params>();
  created(c, reinterpret_cast<const void* const*>(p.array),
          element_bytes(p.desc) * at_least_one(p.width) * at_least_one(p.height),
          "cudaMallocArray");
}

void runtime_malloc_3d_array(api_context& c) {
  const auto& p = c.params<cudaMalloc3DArray_v3020_params>();
  created(c, reinterpret_cast<const void* const*>(p.array),
          element_bytes(p.desc) * at_least_one(p.extent.width) * at_least_one(p.extent.height) *
              at_least_one(p.extent.depth),
          "cudaMalloc3DArray");
}

void runtime_free_array(api_context& c) {
  c.model.array_destroyed(c.here(), handle_of(c.params<cudaFreeArray_v3020_params>().array));
}

template <bool Async>
void runtime_to_array_2d(api_context& c) {
  const auto& p = c.params<cudaMemcpy2DToArrayAsync_v3020_params>();
  c.model.copied(c.here(), c.stream(Async ? p.stream : nullptr), c.model.array_region(handle_of(p.dst)),
                 {address_of(p.src), pitched_extent(p.width, p.height, p.spitch),
                  side_of(p.kind, copy_side::source)},
                 Async);
}

template <bool Async>
void runtime_from_array_2d(api_context& c) {
  const auto& p = c.params<cudaMemcpy2DFromArrayAsync_v3020_params>();
  c.model.copied(c.here(), c.stream(Async ? p.stream : nullptr),
                 {address_of(p.dst), pitched_extent(p.width, p.height, p.dpitch),
                  side_of(p.kind, copy_side::destination)},
                 c.model.array_region(handle_of(p.src)), Async);
}

template <bool Async>
void runtime_to_array(api_context& c) {
  const auto& p = c.params<cudaMemcpyToArrayAsync_v3020_params>();
  c.model.copied(c.here(), c.stream(Async ? p.stream : nullptr), c.model.array_region(handle_of(p.dst)),
                 {address_of(p.src), p.count, side_of(p.kind, copy_side::source)}, Async);
}

template <bool Async>
void runtime_from_array(api_context& c) {
  const auto& p = c.params<cudaMemcpyFromArrayAsync_v3020_params>();
  c.model.copied(c.here(), c.stream(Async ? p.stream : nullptr),
                 {address_of(p.dst), p.count, side_of(p.kind, copy_side::destination)},
                 c.model.array_region(handle_of(p.src)), Async);
}

// ---- driver ----

void driver_array_create(api_context& c) {
  const auto& p = c.params<cuArrayCreate_v2_params>();
  created(c, reinterpret_cast<const void* const*>(p.pHandle),
          driver_array_bytes(p.pAllocateArray, 1), "cuArrayCreate");
}

void driver_array_3d_create(api_context& c) {
  const auto& p = c.params<cuArray3DCreate_v2_params>();
  created(c, reinterpret_cast<const void* const*>(p.pHandle),
          driver_array_bytes(p.pAllocateArray,
                             p.pAllocateArray != nullptr ? p.pAllocateArray->Depth : 1),
          "cuArray3DCreate");
}

void driver_array_destroy(api_context& c) {
  c.model.array_destroyed(c.here(), handle_of(c.params<cuArrayDestroy_params>().hArray));
}

template <bool Async>
void driver_htoa(api_context& c) {
  const auto& p = c.params<cuMemcpyHtoAAsync_v2_params>();
  c.model.copied(c.here(), c.stream(Async ? p.hStream : nullptr),
                 c.model.array_region(handle_of(p.dstArray)),
                 {address_of(p.srcHost), p.ByteCount, memory_side::host}, Async);
}

template <bool Async>
void driver_atoh(api_context& c) {
  const auto& p = c.params<cuMemcpyAtoHAsync_v2_params>();
  c.model.copied(c.here(), c.stream(Async ? p.hStream : nullptr),
                 {address_of(p.dstHost), p.ByteCount, memory_side::host},
                 c.model.array_region(handle_of(p.srcArray)), Async);
}

void driver_dtoa(api_context& c) {
  const auto& p = c.params<cuMemcpyDtoA_v2_params>();
  c.model.copied(c.here(), c.stream(nullptr), c.model.array_region(handle_of(p.dstArray)),
                 {p.srcDevice, p.ByteCount, memory_side::device}, false);
}

void driver_atod(api_context& c) {
  const auto& p = c.params<cuMemcpyAtoD_v2_params>();
  c.model.copied(c.here(), c.stream(nullptr), {p.dstDevice, p.ByteCount, memory_side::device},
                 c.model.array_region(handle_of(p.srcArray)), false);
}

void add_runtime_array_handlers(api_table& t) {
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020}, {.on_exit = runtime_malloc_array});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3DArray_v3020}, {.on_exit = runtime_malloc_3d_array});
  // Note [Frees and destroys on entry]
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaFreeArray_v3020}, {.on_entry = runtime_free_array});
#define STREAMSAN_ARRAY_PAIR(name, fn)                                                    \
  t.add({CUPTI_RUNTIME_TRACE_CBID_##name##_v3020, CUPTI_RUNTIME_TRACE_CBID_##name##_ptds_v7000}, \
        {.on_exit = fn<false>});                                                          \
  t.add({CUPTI_RUNTIME_TRACE_CBID_##name##Async_v3020,                                    \
         CUPTI_RUNTIME_TRACE_CBID_##name##Async_ptsz_v7000},                              \
        {.on_exit = fn<true>})
  STREAMSAN_ARRAY_PAIR(cudaMemcpy2DToArray, runtime_to_array_2d);
  STREAMSAN_ARRAY_PAIR(cudaMemcpy2DFromArray, runtime_from_array_2d);
  STREAMSAN_ARRAY_PAIR(cudaMemcpyToArray, runtime_to_array);
  STREAMSAN_ARRAY_PAIR(cudaMemcpyFromArray, runtime_from_array);
#undef STREAMSAN_ARRAY_PAIR
}

void add_driver_array_handlers(api_table& t) {
  t.add({CUPTI_DRIVER_TRACE_CBID_cuArrayCreate_v2}, {.on_exit = driver_array_create});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuArray3DCreate_v2}, {.on_exit = driver_array_3d_create});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuArrayDestroy}, {.on_entry = driver_array_destroy});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoA_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoA_v2_ptds},
        {.on_exit = driver_htoa<false>});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoAAsync_v2,
         CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoAAsync_v2_ptsz},
        {.on_exit = driver_htoa<true>});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoH_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoH_v2_ptds},
        {.on_exit = driver_atoh<false>});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync_v2,
         CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync_v2_ptsz},
        {.on_exit = driver_atoh<true>});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoA_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoA_v2_ptds},
        {.on_exit = driver_dtoa});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoD_v2_ptds},
        {.on_exit = driver_atod});
}

}  // namespace

void add_array_handlers(api_tables& t) {
  add_runtime_array_handlers(t.runtime);
  add_driver_array_handlers(t.driver);
}

}  // namespace streamsan::injection
