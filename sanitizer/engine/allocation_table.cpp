#include "sanitizer/engine/allocation_table.h"

namespace streamsan {

allocation* allocation_table::create(const alloc_record& r, std::uint64_t seq, stack_id site) {
  if (allocations_.find(r.alloc) != nullptr) return nullptr;  // ids never repeat
  allocation& a = allocations_.get_or_insert(r.alloc);
  a.ref.id = r.alloc;
  a.ref.kind = r.kind;
  a.ref.device = r.device;
  a.ref.size = r.size;
  a.ref.address = r.address;
  a.ref.label = r.label;
  a.ref.site = site;
  a.ref.alloc_seq = seq;
  if (r.kind == memory_kind::cached_block && !is_none(r.parent)) {
    if (allocation* parent = allocations_.find(r.parent); parent != nullptr && parent != &a) {
      a.root = parent->root;
      a.root_offset = parent->root_offset + r.parent_offset;
      ++a.root->dependents;
    }
  }
  ++live_;
  return &a;
}

void allocation_table::mark_freed(allocation& a, bool keep_history) {
  if (a.freed) return;
  a.set_freed(true);
  a.ref.free_site = a.free_op.stack;
  --live_;
  if (!keep_history && a.root == &a) a.history.clear();
  if (a.graph) {
    // Note [Graph allocations]: revived by the next launch. Until then its
    // creation names no epoch, which would keep a retired stream's clock
    // slot from being reused (Note [Retiring context slots]).
    a.set_created_when(epoch{});
    return;
  }
  dead_.push_back(a.ref.id);
  while (dead_.size() > remembered_dead_) {
    const alloc_id oldest = dead_.front();
    dead_.pop_front();
    if (allocation* d = allocations_.find(oldest)) forget(*d);
  }
}

void allocation_table::mark_unborn(allocation& a) {
  a.graph = true;
  a.unborn = true;
  if (a.freed) return;
  a.set_freed(true);
  --live_;
}

void allocation_table::revive(allocation& a) {
  a.unborn = false;
  if (!a.freed) return;
  a.set_freed(false);
  a.ref.free_site = stack_id{};
  a.free_op = access_entry{};
  a.free_context = context_kind::host_thread;
  a.free_stream = stream_id{};
  a.history.clear();
  ++live_;
}

void allocation_table::forget(allocation& a) {
  if (a.dependents > 0) {
    a.forget_when_unreferenced = true;
    return;
  }
  allocation* root = a.root;
  const bool is_root = root == &a;
  allocations_.erase(a.ref.id);  // destroys a
  if (!is_root && --root->dependents == 0 && root->forget_when_unreferenced) forget(*root);
}

}  // namespace streamsan
