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
// - kernels read and write arrays through texture and surface objects
//   (Note [Texture and surface objects] in cuda_model_textures.cpp); the
//   array sides of cudaMemcpy3D and cuMemcpy2D/3D descriptors and
//   array-to-array copies (cudaMemcpyArrayToArray, cudaMemcpy2DArrayToArray,
//   cuMemcpyAtoA) touch the whole array like the other array copies.
// - a report names the array's allocation by its made-up address.
// - the window: a struct word that falls into it by chance would be taken
//   for a pointer into an array (Note [Kernel access inference] scans
//   structs word by word); it starts at 0xa5a5 << 48, a pattern no pointer,
//   small integer or common float has.
//
// Note [Mipmapped arrays]
// A mipmapped array (cudaMallocMipmappedArray, cuMipmappedArrayCreate) is
// one allocation at a made-up range holding all its levels one after the
// other, level 0 first, each as big as its extent halved per level (at
// least 1 in each dimension) times the element size. The driver's layout
// is its own, so where a level really lies is unknown; what matters is that
// levels are disjoint parts of one allocation: a copy into level 1 and a
// texture read of the mipmapped array conflict, copies into two different
// levels do not. cudaGetMipmappedArrayLevel / cuMipmappedArrayGetLevel hand
// out a CUarray for a level: a view of the level's part, which copies name
// like any array; it is not freed on its own (it dies with the mipmapped
// array, whose destroy frees the whole allocation unsynchronized, as for an
// array, and forgets the level handles taken from it).
#include <algorithm>
#include <string>

#include "inject/model/cuda_model.h"

namespace streamsan::injection {
namespace {

constexpr std::uint64_t array_window = 0xa5a5ull << 48;
constexpr std::uint64_t array_gap = 1ull << 16;  // between arrays: no range runs into the next

}  // namespace

std::optional<cuda_model::array_view> cuda_model::new_array_block(const call_site& at,
                                                                 std::uint64_t bytes) {
  std::uint64_t base = 0;
  {
    std::lock_guard lock(mutex_);
    base = next_array_address_ == 0 ? array_window : next_array_address_;
    next_array_address_ = base + ((bytes + array_gap - 1) / array_gap + 1) * array_gap;
  }
  allocated(at, base, bytes, memory_kind::device);
  std::lock_guard lock(mutex_);
  if (!allocations_.find_live(base)) return std::nullopt;
  const auto view = array_view{++next_array_view_};
  array_blocks_[raw(view)] =
      array_block{memory_region{base, bytes, memory_side::device}, true, {}, {}};
  return view;
}

void cuda_model::array_created(const call_site& at, std::uintptr_t array, std::uint64_t bytes,
                               std::string_view api) {
  if (array == 0 || bytes == 0) {
    unmodelled(at, std::string(api) + " (array size unknown)");
    return;
  }
  const auto view = new_array_block(at, bytes);
  if (!view) return;
  std::lock_guard lock(mutex_);
  arrays_.create(array, *view);
}

void cuda_model::array_destroyed(const call_site& at, std::uintptr_t array) {
  std::uint64_t base = 0;
  {
    std::lock_guard lock(mutex_);
    const auto* e = arrays_.find(array);
    // An array made before the callbacks were on, or unsized; a level is
    // not the program's to free.
    if (e == nullptr || e->destroyed) return;
    const auto it = array_blocks_.find(raw(e->id));
    if (it == array_blocks_.end() || !it->second.owns) return;
    arrays_.destroy(array);
    base = it->second.region.address;
    array_blocks_.erase(it);
  }
  freed(at, base, free_mode::unsynchronized);
}

memory_region cuda_model::view_region_locked(const handle_table<array_view>& table,
                                             std::uintptr_t handle) const {
  const auto* e = table.find(handle);
  if (e == nullptr || e->destroyed) return {0, 0, memory_side::device};
  const auto it = array_blocks_.find(raw(e->id));
  return it == array_blocks_.end() ? memory_region{0, 0, memory_side::device} : it->second.region;
}

memory_region cuda_model::array_region(std::uintptr_t array) {
  std::lock_guard lock(mutex_);
  return view_region_locked(arrays_, array);
}

memory_region cuda_model::mipmapped_array_region(std::uintptr_t mipmap) {
  std::lock_guard lock(mutex_);
  return view_region_locked(mipmaps_, mipmap);
}

void cuda_model::mipmapped_array_created(const call_site& at, std::uintptr_t mipmap,
                                         std::span<const std::uint64_t> level_bytes,
                                         std::string_view api) {
  std::uint64_t total = 0;
  bool sized = !level_bytes.empty();
  for (const auto bytes : level_bytes) {
    sized = sized && bytes != 0;
    total += bytes;
  }
  if (mipmap == 0 || !sized) {
    unmodelled(at, std::string(api) + " (array size unknown)");
    return;
  }
  const auto view = new_array_block(at, total);
  if (!view) return;
  std::lock_guard lock(mutex_);
  array_block& block = array_blocks_[raw(*view)];
  std::uint64_t address = block.region.address;
  for (const auto bytes : level_bytes) {
    block.levels.push_back(memory_region{address, bytes, memory_side::device});
    address += bytes;
  }
  mipmaps_.create(mipmap, *view);
}

void cuda_model::mipmap_level_taken(std::uintptr_t array, std::uintptr_t mipmap,
                                    std::uint32_t level) {
  std::lock_guard lock(mutex_);
  const auto* e = mipmaps_.find(mipmap);
  if (array == 0 || e == nullptr || e->destroyed) return;
  const auto it = array_blocks_.find(raw(e->id));
  if (it == array_blocks_.end() || level >= it->second.levels.size()) return;
  const memory_region part = it->second.levels[level];
  auto& taken = it->second.level_arrays;
  if (std::find(taken.begin(), taken.end(), array) == taken.end()) taken.push_back(array);
  // The same level asked again (the same handle): its earlier view goes.
  if (const auto* before = arrays_.find(array); before != nullptr && !before->destroyed) {
    const auto old = array_blocks_.find(raw(before->id));
    if (old != array_blocks_.end() && !old->second.owns) array_blocks_.erase(old);
  }
  const auto view = array_view{++next_array_view_};
  array_blocks_[raw(view)] = array_block{part, false, {}, {}};
  arrays_.create(array, view);
}

void cuda_model::mipmapped_array_destroyed(const call_site& at, std::uintptr_t mipmap) {
  std::uint64_t base = 0;
  {
    std::lock_guard lock(mutex_);
    const auto id = mipmaps_.destroy(mipmap);
    if (!id) return;
    const auto it = array_blocks_.find(raw(*id));
    if (it == array_blocks_.end()) return;
    base = it->second.region.address;
    for (const auto level : it->second.level_arrays) {
      // Unless the driver handed the handle out again meanwhile.
      const auto* e = arrays_.find(level);
      if (e == nullptr || e->destroyed) continue;
      const auto part = array_blocks_.find(raw(e->id));
      if (part == array_blocks_.end() || part->second.owns) continue;
      array_blocks_.erase(part);
      arrays_.destroy(level);
    }
    array_blocks_.erase(it);
  }
  freed(at, base, free_mode::unsynchronized);
}

}  // namespace streamsan::injection
