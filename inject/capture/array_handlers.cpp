// CUDA arrays (Note [CUDA arrays]): creation, destruction, and the copies
// that name an array by handle. A copy writes or reads the whole array.
// Mipmapped arrays and their levels (Note [Mipmapped arrays]); texture and
// surface objects over arrays and device memory (Note [Texture and surface
// objects]).

#include <algorithm>
#include <string_view>
#include <vector>

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

// The bytes of each level of a mipmapped array of `element` bytes per
// element: each dimension halves per level (at least 1), except the layers
// of a layered or cubemap array. `levels` is clamped as the API does, to
// [1, 1 + floor(log2(largest dimension))].
std::vector<std::uint64_t> level_bytes(std::uint64_t element, std::size_t width,
                                       std::size_t height, std::size_t depth, bool layered,
                                       unsigned levels) {
  std::vector<std::uint64_t> out;
  if (element == 0) return out;
  const std::size_t largest = std::max({width, height, layered ? std::size_t{0} : depth});
  unsigned most = 1;
  while (most < 64 && (largest >> most) != 0) ++most;
  levels = std::clamp(levels, 1u, most);
  for (unsigned i = 0; i < levels; ++i) {
    out.push_back(element * at_least_one(width >> i) * at_least_one(height >> i) *
                  at_least_one(layered ? depth : depth >> i));
  }
  return out;
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

template <class Params>
void runtime_array_to_array(api_context& c) {
  const auto& p = c.params<Params>();
  c.model.copied(c.here(), c.stream(nullptr), c.model.array_region(handle_of(p.dst)),
                 c.model.array_region(handle_of(p.src)), false);
}

void runtime_malloc_mipmapped(api_context& c) {
  const auto& p = c.params<cudaMallocMipmappedArray_v5000_params>();
  const bool layered = (p.flags & (cudaArrayLayered | cudaArrayCubemap)) != 0;
  const auto levels = level_bytes(element_bytes(p.desc), p.extent.width, p.extent.height,
                                  p.extent.depth, layered, p.numLevels);
  c.model.mipmapped_array_created(
      c.here(), p.mipmappedArray != nullptr ? handle_of(*p.mipmappedArray) : 0, levels,
      "cudaMallocMipmappedArray");
}

void runtime_mipmap_level(api_context& c) {
  const auto& p = c.params<cudaGetMipmappedArrayLevel_v5000_params>();
  if (p.levelArray == nullptr) return;
  c.model.mipmap_level_taken(handle_of(*p.levelArray), handle_of(p.mipmappedArray), p.level);
}

void runtime_free_mipmapped(api_context& c) {
  c.model.mipmapped_array_destroyed(
      c.here(), handle_of(c.params<cudaFreeMipmappedArray_v5000_params>().mipmappedArray));
}

// What a texture or surface object views (Note [Texture and surface objects]).
memory_region resource_region(api_context& c, const cudaResourceDesc* r) {
  if (r == nullptr) return {0, 0, memory_side::device};
  switch (r->resType) {
    case cudaResourceTypeArray: return c.model.array_region(handle_of(r->res.array.array));
    case cudaResourceTypeMipmappedArray:
      return c.model.mipmapped_array_region(handle_of(r->res.mipmap.mipmap));
    case cudaResourceTypeLinear:
      return {address_of(r->res.linear.devPtr), r->res.linear.sizeInBytes, memory_side::device};
    case cudaResourceTypePitch2D:
      return {address_of(r->res.pitch2D.devPtr),
              pitched_extent(r->res.pitch2D.pitchInBytes, r->res.pitch2D.height,
                             r->res.pitch2D.pitchInBytes),
              memory_side::device};
  }
  return {0, 0, memory_side::device};
}

void runtime_create_texture(api_context& c) {
  const auto& p = c.params<cudaCreateTextureObject_v5000_params>();
  if (p.pTexObject == nullptr) return;
  c.model.texture_object_created(*p.pTexObject, resource_region(c, p.pResDesc),
                                 access_mode::read);
}

void runtime_create_surface(api_context& c) {
  const auto& p = c.params<cudaCreateSurfaceObject_v5000_params>();
  if (p.pSurfObject == nullptr) return;
  c.model.texture_object_created(*p.pSurfObject, resource_region(c, p.pResDesc),
                                 access_mode::read_write);
}

void runtime_destroy_texture(api_context& c) {
  c.model.texture_object_destroyed(c.params<cudaDestroyTextureObject_v5000_params>().texObject);
}

void runtime_destroy_surface(api_context& c) {
  c.model.texture_object_destroyed(c.params<cudaDestroySurfaceObject_v5000_params>().surfObject);
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

void driver_atoa(api_context& c) {
  const auto& p = c.params<cuMemcpyAtoA_v2_params>();
  c.model.copied(c.here(), c.stream(nullptr), c.model.array_region(handle_of(p.dstArray)),
                 c.model.array_region(handle_of(p.srcArray)), false);
}

void driver_mipmapped_create(api_context& c) {
  const auto& p = c.params<cuMipmappedArrayCreate_params>();
  std::vector<std::uint64_t> levels;
  if (const auto* d = p.pMipmappedArrayDesc) {
    const bool layered = (d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
    levels = level_bytes(channel_bytes(d->Format) * d->NumChannels, d->Width, d->Height,
                         d->Depth, layered, p.numMipmapLevels);
  }
  c.model.mipmapped_array_created(c.here(), p.pHandle != nullptr ? handle_of(*p.pHandle) : 0,
                                  levels, "cuMipmappedArrayCreate");
}

void driver_mipmap_level(api_context& c) {
  const auto& p = c.params<cuMipmappedArrayGetLevel_params>();
  if (p.pLevelArray == nullptr) return;
  c.model.mipmap_level_taken(handle_of(*p.pLevelArray), handle_of(p.hMipmappedArray), p.level);
}

void driver_mipmapped_destroy(api_context& c) {
  c.model.mipmapped_array_destroyed(
      c.here(), handle_of(c.params<cuMipmappedArrayDestroy_params>().hMipmappedArray));
}

memory_region resource_region(api_context& c, const CUDA_RESOURCE_DESC* r) {
  if (r == nullptr) return {0, 0, memory_side::device};
  switch (r->resType) {
    case CU_RESOURCE_TYPE_ARRAY: return c.model.array_region(handle_of(r->res.array.hArray));
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
      return c.model.mipmapped_array_region(handle_of(r->res.mipmap.hMipmappedArray));
    case CU_RESOURCE_TYPE_LINEAR:
      return {r->res.linear.devPtr, r->res.linear.sizeInBytes, memory_side::device};
    case CU_RESOURCE_TYPE_PITCH2D:
      return {r->res.pitch2D.devPtr,
              pitched_extent(r->res.pitch2D.pitchInBytes, r->res.pitch2D.height,
                             r->res.pitch2D.pitchInBytes),
              memory_side::device};
  }
  return {0, 0, memory_side::device};
}

void driver_tex_create(api_context& c) {
  const auto& p = c.params<cuTexObjectCreate_params>();
  if (p.pTexObject == nullptr) return;
  c.model.texture_object_created(*p.pTexObject, resource_region(c, p.pResDesc),
                                 access_mode::read);
}

void driver_surf_create(api_context& c) {
  const auto& p = c.params<cuSurfObjectCreate_params>();
  if (p.pSurfObject == nullptr) return;
  c.model.texture_object_created(*p.pSurfObject, resource_region(c, p.pResDesc),
                                 access_mode::read_write);
}

void driver_tex_destroy(api_context& c) {
  c.model.texture_object_destroyed(c.params<cuTexObjectDestroy_params>().texObject);
}

void driver_surf_destroy(api_context& c) {
  c.model.texture_object_destroyed(c.params<cuSurfObjectDestroy_params>().surfObject);
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
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyArrayToArray_v3020,
         CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyArrayToArray_ptds_v7000},
        {.on_exit = runtime_array_to_array<cudaMemcpyArrayToArray_v3020_params>});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DArrayToArray_v3020,
         CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DArrayToArray_ptds_v7000},
        {.on_exit = runtime_array_to_array<cudaMemcpy2DArrayToArray_v3020_params>});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaMallocMipmappedArray_v5000},
        {.on_exit = runtime_malloc_mipmapped});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaGetMipmappedArrayLevel_v5000},
        {.on_exit = runtime_mipmap_level});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaFreeMipmappedArray_v5000},
        {.on_entry = runtime_free_mipmapped});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaCreateTextureObject_v5000},
        {.on_exit = runtime_create_texture});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaCreateSurfaceObject_v5000},
        {.on_exit = runtime_create_surface});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaDestroyTextureObject_v5000},
        {.on_entry = runtime_destroy_texture});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaDestroySurfaceObject_v5000},
        {.on_entry = runtime_destroy_surface});
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
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoA_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoA_v2_ptds},
        {.on_exit = driver_atoa});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayCreate}, {.on_exit = driver_mipmapped_create});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayGetLevel}, {.on_exit = driver_mipmap_level});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuMipmappedArrayDestroy}, {.on_entry = driver_mipmapped_destroy});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuTexObjectCreate}, {.on_exit = driver_tex_create});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuSurfObjectCreate}, {.on_exit = driver_surf_create});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuTexObjectDestroy}, {.on_entry = driver_tex_destroy});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuSurfObjectDestroy}, {.on_entry = driver_surf_destroy});
}

}  // namespace

void add_array_handlers(api_tables& t) {
  add_runtime_array_handlers(t.runtime);
  add_driver_array_handlers(t.driver);
}

}  // namespace streamsan::injection
