// CUDA arrays as allocations of the log.
//
// Note [CUDA arrays]
// A CUDA array (cudaMallocArray, cudaMalloc3DArray, cuArrayCreate,
// cuArray3DCreate) is device memory with no device address: its layout is
// the driver's (tiled), and kernels reach it only through texture and
// surface objects. The model gives each array an allocation of its own (a
// fresh alloc_id, bound to the handle at the boundary like every handle)
// and a made-up address range in a window no host or device pointer can be
// in (non-canonical on x86-64 and beyond every GPU virtual address), so
// that copies name it like any allocation:
// - a copy to an array writes the whole array, a copy from one reads the
//   whole array, whatever the offsets: byte offsets into a tiled array
//   cannot be mapped onto one linear range exactly, and a smaller range
//   would miss races. So two copies into disjoint parts of one array on
//   two unordered streams are reported (a conservative race).
// - cudaFreeArray / cuArrayDestroy free it; the documentation does not
//   promise that they synchronize, so the free is unsynchronized (the host
//   must be ordered after every use already, S-MEM-5).
// - an array whose size the model cannot compute (a block-compressed or
//   planar format, no descriptor) is listed and stays unknown: copies to it
//   still order, they just have no bytes to conflict on.
// - missed: kernels reading or writing an array through a texture or
//   surface object (the object is an opaque 64-bit value; the launch's
//   footprint does not include the array), cudaMemcpy2D/3D and cuMemcpy2D/3D
//   descriptors that name an array (still untracked on that side), mipmapped
//   arrays and array-to-array copies (listed).
// - a report names the array's allocation by its made-up address.
// - the window: a struct word that falls into it by chance would be taken
//   for a pointer into an array (Note [Kernel access inference] scans
//   structs word by word); it starts at 0xa5a5 << 48, a pattern no pointer,
//   small integer or common float has.
#include <string>

#include "inject/model/cuda_model.h"

namespace streamsan::injection {
namespace {

constexpr std::uint64_t array_window = 0xa5a5ull << 48;
constexpr std::uint64_t array_gap = 1ull << 16;  // between arrays: no range runs into the next

}  // namespace

void cuda_model::array_created(const call_site& at, std::uintptr_t array, std::uint64_t bytes,
                               std::string_view api) {
  if (array == 0 || bytes == 0) {
    unmodelled(at, std::string(api) + " (array size unknown)");
    return;
  }
  std::uint64_t base = 0;
  {
    std::lock_guard lock(mutex_);
    base = next_array_address_ == 0 ? array_window : next_array_address_;
    next_array_address_ = base + ((bytes + array_gap - 1) / array_gap + 1) * array_gap;
  }
  allocated(at, base, bytes, memory_kind::device);
  std::lock_guard lock(mutex_);
  const auto hit = allocations_.find(base);
  if (!hit) return;
  arrays_.create(array, hit->block.id);
  array_blocks_[raw(hit->block.id)] = memory_region{base, bytes, memory_side::device};
}

void cuda_model::array_destroyed(const call_site& at, std::uintptr_t array) {
  std::uint64_t base = 0;
  {
    std::lock_guard lock(mutex_);
    const auto id = arrays_.destroy(array);
    if (!id) return;  // an array made before the callbacks were on, or unsized
    const auto it = array_blocks_.find(raw(*id));
    if (it == array_blocks_.end()) return;
    base = it->second.address;
    array_blocks_.erase(it);
  }
  freed(at, base, free_mode::unsynchronized);
}

memory_region cuda_model::array_region(std::uintptr_t array) {
  std::lock_guard lock(mutex_);
  const auto* e = arrays_.find(array);
  if (e == nullptr || e->destroyed) return {0, 0, memory_side::device};
  const auto it = array_blocks_.find(raw(e->id));
  return it == array_blocks_.end() ? memory_region{0, 0, memory_side::device} : it->second;
}

}  // namespace streamsan::injection
