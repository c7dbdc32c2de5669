// Virtual memory management (cuMemCreate, cuMemMap, cuMemUnmap, cuMemRelease,
// cuMemRetainAllocationHandle, cuMemAddressFree) and IPC memory handles
// (cudaIpcOpenMemHandle, cudaIpcCloseMemHandle).
//
// Note [Virtual memory management]
// The driver's VMM API splits an allocation in two: cuMemCreate makes
// physical memory and returns a handle, cuMemMap maps (part of) it at an
// address of a range reserved with cuMemAddressReserve, cuMemSetAccess lets
// devices access the mapping, cuMemUnmap takes the mapping away, and
// cuMemRelease drops the handle. The physical memory lives while a handle
// or a mapping refers to it ("freed when all outstanding mappings are
// unmapped and all outstanding references to the handle are released").
// The model:
// - The physical memory is a root allocation (alloc_record, no address: it
//   is reached only through mappings), and each mapping a block of it
//   (memory_kind::cached_block, its parent the root, at the mapping's offset,
//   labelled "cuMemMap"), entered in the allocation map at its address. So
//   kernel arguments, copies and memsets that point into a mapping resolve
//   to it, and its accesses land in the root's history (Note [Histories live
//   on root allocations]): one physical allocation mapped at two addresses
//   (aliasing) is one history, and a race between the two views is found.
// - cuMemUnmap ends each mapping in its range with a free
//   that does not synchronize (free_mode::unsynchronized): the reference
//   entry says only that it "exhibits synchronous behavior for most use
//   cases" (\note_sync), a might, not a promise (semantics.md; PyTorch's
//   expandable segments synchronize their stream before unmapping, because
//   unmap and release "do not appear to synchronize in all cases"). So the
//   host must be ordered after every use of the mapping first, as for
//   cudaFreeHost, else free-while-in-use; a later access through the
//   address is a use after free, as after cudaFree.
// - The root is freed when its last reference and its last mapping are gone
//   (cuMemRelease with mappings left keeps it alive), with nothing to check:
//   every access went through a mapping whose unmap was checked
//   (free_mode::cached: the history stays until the engine forgets it).
// - cuMemRetainAllocationHandle adds a reference to the memory mapped at
//   its address, under the handle it returns; cuMemRelease drops one.
// - A handle mapped before the model saw it made (cuMemImportFromShareableHandle,
//   made before the callbacks were on) gets a root on the spot, of the size
//   the mapping needs and one reference.
// - cuMemAddressFree ends the mappings still inside the reservation (the
//   same as an unmap); cuMemAddressReserve, cuMemSetAccess and the export
//   and import of shareable handles are inert (Note [Inert calls that look
//   like ordering]).
// What is missed, never invented:
// - memory of one allocation imported twice (two handles from
//   cuMemImportFromShareableHandle of one shareable handle, or a multicast
//   object) is two roots: races between the two are missed;
// - a kernel argument's inferred footprint ends at the end of its mapping,
//   so a buffer laid over several adjacent mappings (PyTorch's expandable
//   segments) is guessed shorter than it is; a copy or memset that crosses
//   into the next mapping is clamped to the first (its measured accesses
//   resolve by address, each to its own mapping).
//
// Note [IPC memory handles]
// cudaIpcOpenMemHandle maps memory another process allocated: an allocation
// of this process from the open on (device memory of the current device; its
// extent is asked of the driver, cuPointerGetAttribute's range). Opening a
// handle already open returns the same address and counts a reference;
// cudaIpcCloseMemHandle drops one and the last unmaps it, which, with no
// synchronization documented, is a free that does not synchronize. The other
// process's accesses to the same memory are not seen: races between the
// processes are missed.
#include <algorithm>
#include <string>

#include "inject/model/cuda_model.h"

namespace streamsan::injection {

void cuda_model::physical_created(const call_site& at, std::uint64_t handle, std::uint64_t size,
                                  memory_kind kind, std::optional<std::int32_t> device) {
  const std::int32_t on = device.value_or(driver_.current_device());
  std::lock_guard lock(mutex_);
  // A handle value handed out again without a release we saw: the old
  // binding loses its reference.
  drop_physical_reference_locked(at, handle);
  new_physical_locked(at, handle, size, kind, on);
}

alloc_id cuda_model::new_physical_locked(const call_site& at, std::uint64_t handle,
                                         std::uint64_t size, memory_kind kind,
                                         std::int32_t device) {
  const alloc_id root = rec_.new_alloc_id();
  alloc_record r;
  r.alloc = root;
  r.kind = kind;
  r.device = device;
  r.size = size;
  emit(at, r);
  physicals_.emplace(raw(root), physical_memory{size, kind, device, 1, 0});
  physical_handles_[handle] = root;
  return root;
}

void cuda_model::drop_physical_reference_locked(const call_site& at, std::uint64_t handle) {
  const auto h = physical_handles_.find(handle);
  if (h == physical_handles_.end()) return;  // never seen, or released
  const alloc_id root = h->second;
  const auto p = physicals_.find(raw(root));
  if (p == physicals_.end()) {
    physical_handles_.erase(h);
    return;
  }
  if (p->second.references > 0) --p->second.references;
  if (p->second.references == 0) physical_handles_.erase(h);
  free_physical_if_unused_locked(at, root);
}

void cuda_model::free_physical_if_unused_locked(const call_site& at, alloc_id root) {
  const auto p = physicals_.find(raw(root));
  if (p == physicals_.end() || p->second.references > 0 || p->second.mappings > 0) return;
  physicals_.erase(p);
  emit(at, free_record{root, free_mode::cached, {}});
}

void cuda_model::physical_released(const call_site& at, std::uint64_t handle) {
  std::lock_guard lock(mutex_);
  drop_physical_reference_locked(at, handle);
}

void cuda_model::physical_retained(const call_site& at, std::uint64_t handle,
                                   std::uint64_t address) {
  std::lock_guard lock(mutex_);
  auto it = mappings_.upper_bound(address);
  if (it == mappings_.begin()) return;
  --it;
  if (address - it->first >= it->second.size) return;  // not mapped: the call failed
  const auto p = physicals_.find(raw(it->second.root));
  if (p == physicals_.end()) return;
  ++p->second.references;
  // The same handle again (the driver's, or one of ours) or a new one: a
  // binding to another root loses its reference first.
  if (const auto h = physical_handles_.find(handle);
      h != physical_handles_.end() && h->second != it->second.root) {
    const alloc_id root = it->second.root;
    drop_physical_reference_locked(at, handle);
    physical_handles_[handle] = root;
    return;
  }
  physical_handles_[handle] = it->second.root;
}

void cuda_model::mapped(const call_site& at, std::uint64_t address, std::uint64_t size,
                        std::uint64_t offset, std::uint64_t handle) {
  const std::int32_t device = driver_.current_device();
  std::lock_guard lock(mutex_);
  const auto h = physical_handles_.find(handle);
  const auto known =
      h == physical_handles_.end() ? physicals_.end() : physicals_.find(raw(h->second));
  const alloc_id root =
      known != physicals_.end()
          ? h->second
          : new_physical_locked(at, handle, offset + size, memory_kind::device, device);
  physical_memory& p = physicals_.find(raw(root))->second;
  // A mapping of this range we missed the end of (its unmap was not seen):
  // the driver could not map here unless it was gone.
  end_mappings_locked(at, address, size, free_mode::cached);
  const alloc_id block = rec_.new_alloc_id();
  allocations_.insert(allocation{block, address, size, memory_kind::cached_block, p.device});
  alloc_record r;
  r.alloc = block;
  r.kind = memory_kind::cached_block;
  r.device = p.device;
  r.size = size;
  r.address = address;
  r.parent = root;
  r.parent_offset = offset;
  r.label = rec_.intern("cuMemMap");
  emit(at, r);
  mappings_[address] = mapping{block, root, size};
  ++p.mappings;
}

void cuda_model::unmapped(const call_site& at, std::uint64_t address, std::uint64_t size) {
  std::lock_guard lock(mutex_);
  end_mappings_locked(at, address, size, free_mode::unsynchronized);
}

// The mappings that overlap [address, address + size), in address order.
void cuda_model::end_mappings_locked(const call_site& at, std::uint64_t address,
                                     std::uint64_t size, free_mode mode) {
  const std::uint64_t end = size > ~address ? ~std::uint64_t{0} : address + size;
  auto it = mappings_.upper_bound(address);
  if (it != mappings_.begin() && std::prev(it)->first + std::prev(it)->second.size > address) {
    --it;
  }
  while (it != mappings_.end() && it->first < end) {
    const mapping m = it->second;
    allocations_.erase(it->first);
    it = mappings_.erase(it);
    emit(at, free_record{m.block, mode, {}});
    if (const auto p = physicals_.find(raw(m.root)); p != physicals_.end()) {
      if (p->second.mappings > 0) --p->second.mappings;
      free_physical_if_unused_locked(at, m.root);
    }
  }
}

// ---- IPC memory handles (Note [IPC memory handles]) ----

void cuda_model::ipc_memory_opened(const call_site& at, std::uint64_t address,
                                   std::string_view api) {
  {
    std::lock_guard lock(mutex_);
    if (const auto it = ipc_opens_.find(address); it != ipc_opens_.end()) {
      ++it->second;  // open already: the same address, one more reference
      return;
    }
  }
  const auto range = driver_.allocation_range(address);
  if (!range || range->first != address) {
    unmodelled(at, std::string(api) + " (extent unknown)");
    return;
  }
  const std::int32_t device = driver_.current_device();
  std::lock_guard lock(mutex_);
  if (const auto it = ipc_opens_.find(address); it != ipc_opens_.end()) {
    ++it->second;  // another thread opened it meanwhile
    return;
  }
  const alloc_id id = rec_.new_alloc_id();
  allocations_.insert(allocation{id, address, range->second, memory_kind::device, device});
  alloc_record r;
  r.alloc = id;
  r.kind = memory_kind::device;
  r.device = device;
  r.size = range->second;
  r.address = address;
  r.label = rec_.intern("cudaIpcOpenMemHandle");
  emit(at, r);
  ipc_opens_.emplace(address, 1);
}

void cuda_model::ipc_memory_closed(const call_site& at, std::uint64_t address) {
  std::lock_guard lock(mutex_);
  const auto it = ipc_opens_.find(address);
  if (it == ipc_opens_.end()) return;  // not opened through a call we saw
  if (--it->second > 0) return;
  ipc_opens_.erase(it);
  if (const auto a = allocations_.erase(address)) {
    emit(at, free_record{a->id, free_mode::unsynchronized, {}});
  }
}

}  // namespace streamsan::injection
