#include "inject/model/copy_regions.h"

namespace streamsan::injection {
namespace {

memory_region driver_region(CUmemorytype type, const void* host, CUdeviceptr device,
                            std::uint64_t start, std::uint64_t extent) {
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      return {reinterpret_cast<std::uint64_t>(host) + start, extent, memory_side::host};
    case CU_MEMORYTYPE_DEVICE:
      return {device + start, extent, memory_side::device};
    case CU_MEMORYTYPE_UNIFIED:
      return {device + start, extent, memory_side::unknown};
    case CU_MEMORYTYPE_ARRAY:
      break;
  }
  // Arrays are opaque handles: nothing streamsan tracks.
  return {0, 0, memory_side::device};
}

// `other_is_array`: the other side is a CUDA array, so extent.width and
// pos.x count the array's elements, not bytes; with no element size here,
// a row is taken whole (its pitch) from the row's start, which covers it.
memory_region runtime_region(cudaArray_const_t array, const cudaPos& pos,
                             const cudaPitchedPtr& ptr, const cudaExtent& extent,
                             bool other_is_array) noexcept {
  if (array != nullptr || ptr.ptr == nullptr) return {0, 0, memory_side::device};
  const std::size_t rows_per_slice = ptr.ysize != 0 ? ptr.ysize : extent.height;
  const std::uint64_t start = (other_is_array ? 0 : pos.x) + pos.y * ptr.pitch +
                              pos.z * ptr.pitch * rows_per_slice;
  const std::size_t width = other_is_array ? ptr.pitch : extent.width;
  return {reinterpret_cast<std::uint64_t>(ptr.ptr) + start,
          pitched_extent(width, extent.height, ptr.pitch, extent.depth,
                         ptr.pitch * rows_per_slice),
          memory_side::unknown};
}

template <class Parms>
memory_region runtime_side(const Parms& p, copy_side side) noexcept {
  return side == copy_side::source
             ? runtime_region(p.srcArray, p.srcPos, p.srcPtr, p.extent, p.dstArray != nullptr)
             : runtime_region(p.dstArray, p.dstPos, p.dstPtr, p.extent, p.srcArray != nullptr);
}

}  // namespace

memory_side side_of(cudaMemcpyKind kind, copy_side side) noexcept {
  const bool dst = side == copy_side::destination;
  switch (kind) {
    case cudaMemcpyHostToHost: return memory_side::host;
    case cudaMemcpyHostToDevice: return dst ? memory_side::device : memory_side::host;
    case cudaMemcpyDeviceToHost: return dst ? memory_side::host : memory_side::device;
    case cudaMemcpyDeviceToDevice: return memory_side::device;
    case cudaMemcpyDefault: return memory_side::unknown;
  }
  return memory_side::unknown;
}

std::uint64_t pitched_extent(std::size_t width, std::size_t rows, std::size_t pitch,
                             std::size_t slices, std::size_t slice_pitch) noexcept {
  if (width == 0) return 0;
  const std::uint64_t r = rows == 0 ? 1 : rows;
  const std::uint64_t s = slices == 0 ? 1 : slices;
  return (s - 1) * slice_pitch + (r - 1) * pitch + width;
}

memory_region region_of(const CUDA_MEMCPY2D& p, copy_side side) noexcept {
  const std::uint64_t extent = pitched_extent(
      p.WidthInBytes, p.Height, side == copy_side::source ? p.srcPitch : p.dstPitch);
  if (side == copy_side::source) {
    return driver_region(p.srcMemoryType, p.srcHost, p.srcDevice,
                         p.srcXInBytes + p.srcY * p.srcPitch, extent);
  }
  return driver_region(p.dstMemoryType, p.dstHost, p.dstDevice,
                       p.dstXInBytes + p.dstY * p.dstPitch, extent);
}

// CUDA_MEMCPY3D and CUDA_MEMCPY3D_PEER name their fields alike.
template <class Copy3D>
memory_region region_of_3d(const Copy3D& p, copy_side side) noexcept {
  const bool src = side == copy_side::source;
  const std::size_t pitch = src ? p.srcPitch : p.dstPitch;
  const std::size_t rows = (src ? p.srcHeight : p.dstHeight) != 0
                               ? (src ? p.srcHeight : p.dstHeight)
                               : p.Height;
  const std::size_t start = src ? p.srcXInBytes + p.srcY * pitch + p.srcZ * pitch * rows
                                : p.dstXInBytes + p.dstY * pitch + p.dstZ * pitch * rows;
  const std::uint64_t extent = pitched_extent(p.WidthInBytes, p.Height, pitch, p.Depth, pitch * rows);
  return src ? driver_region(p.srcMemoryType, p.srcHost, p.srcDevice, start, extent)
             : driver_region(p.dstMemoryType, p.dstHost, p.dstDevice, start, extent);
}

memory_region region_of(const CUDA_MEMCPY3D& p, copy_side side) noexcept {
  return region_of_3d(p, side);
}

memory_region region_of(const CUDA_MEMCPY3D_PEER& p, copy_side side) noexcept {
  return region_of_3d(p, side);
}

memory_region region_of(const cudaMemcpy3DParms& p, copy_side side) noexcept {
  memory_region r = runtime_side(p, side);
  if (r.size != 0) r.side = side_of(p.kind, side);
  return r;
}

memory_region region_of(const cudaMemcpy3DPeerParms& p, copy_side side) noexcept {
  memory_region r = runtime_side(p, side);
  if (r.size != 0) r.side = memory_side::device;
  return r;
}

namespace {

// The driver descriptors name their fields alike.
template <class Copy>
std::uintptr_t driver_array_of(const Copy& p, copy_side side) noexcept {
  const bool src = side == copy_side::source;
  if ((src ? p.srcMemoryType : p.dstMemoryType) != CU_MEMORYTYPE_ARRAY) return 0;
  return reinterpret_cast<std::uintptr_t>(src ? p.srcArray : p.dstArray);
}

template <class Parms>
std::uintptr_t runtime_array_of(const Parms& p, copy_side side) noexcept {
  return reinterpret_cast<std::uintptr_t>(side == copy_side::source ? p.srcArray : p.dstArray);
}

}  // namespace

std::uintptr_t array_of(const CUDA_MEMCPY2D& p, copy_side side) noexcept {
  return driver_array_of(p, side);
}

std::uintptr_t array_of(const CUDA_MEMCPY3D& p, copy_side side) noexcept {
  return driver_array_of(p, side);
}

std::uintptr_t array_of(const CUDA_MEMCPY3D_PEER& p, copy_side side) noexcept {
  return driver_array_of(p, side);
}

std::uintptr_t array_of(const cudaMemcpy3DParms& p, copy_side side) noexcept {
  return runtime_array_of(p, side);
}

std::uintptr_t array_of(const cudaMemcpy3DPeerParms& p, copy_side side) noexcept {
  return runtime_array_of(p, side);
}

}  // namespace streamsan::injection
