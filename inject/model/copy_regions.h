// The memory span each side of a CUDA copy or memset covers, from the many
// parameter shapes the API has (1D, pitched 2D, 3D, peer, runtime and
// driver structs). A pitched copy covers [start, start + extent) where the
// extent runs from the first byte of the first row to the last byte of the
// last row: the bytes between rows are not touched, but a byte range cannot
// say so, and over-approximating is the sound side for race detection.
#pragma once

#include <cuda.h>
#include <driver_types.h>

#include <cstddef>
#include <cstdint>

#include "inject/model/driver_queries.h"

namespace streamsan::injection {

enum class copy_side : std::uint8_t { source, destination };

// Which side of a cudaMemcpyKind is host memory.
memory_side side_of(cudaMemcpyKind kind, copy_side side) noexcept;

// A pitched block: `rows` rows of `width` bytes, `pitch` apart, `slices`
// slices of `slice_pitch` bytes apart.
std::uint64_t pitched_extent(std::size_t width, std::size_t rows, std::size_t pitch,
                             std::size_t slices = 1, std::size_t slice_pitch = 0) noexcept;

memory_region region_of(const CUDA_MEMCPY2D& p, copy_side side) noexcept;
memory_region region_of(const CUDA_MEMCPY3D& p, copy_side side) noexcept;
memory_region region_of(const CUDA_MEMCPY3D_PEER& p, copy_side side) noexcept;
memory_region region_of(const cudaMemcpy3DParms& p, copy_side side) noexcept;
memory_region region_of(const cudaMemcpy3DPeerParms& p, copy_side side) noexcept;

// The CUDA array a side of a descriptor names (CU_MEMORYTYPE_ARRAY, or a
// non-null srcArray/dstArray); 0 when that side is memory. region_of()
// gives such a side no bytes: the caller asks the model for the array's.
std::uintptr_t array_of(const CUDA_MEMCPY2D& p, copy_side side) noexcept;
std::uintptr_t array_of(const CUDA_MEMCPY3D& p, copy_side side) noexcept;
std::uintptr_t array_of(const CUDA_MEMCPY3D_PEER& p, copy_side side) noexcept;
std::uintptr_t array_of(const cudaMemcpy3DParms& p, copy_side side) noexcept;
std::uintptr_t array_of(const cudaMemcpy3DPeerParms& p, copy_side side) noexcept;

}  // namespace streamsan::injection
