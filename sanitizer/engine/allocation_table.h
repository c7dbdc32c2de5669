// Allocations, their roots, and what is remembered after they are freed.
//
// Note [Histories live on root allocations]
// A caching allocator carves blocks out of segments it got from the driver
// and hands the same bytes out again as a new block (a new alloc id) without
// synchronizing (S-MEM-1). If each block had its own history, a block reused
// on another stream would start clean and the race between the old and the
// new user would be invisible. So the history lives on the root allocation
// (the segment); a block translates its offsets into the root's and shares
// the root's history, and freeing a block into the cache ("cached" free)
// leaves that history in place. A reuse that is not ordered after the old
// block's last uses then conflicts on exactly the reused bytes.
#pragma once

#include <cstdint>
#include <deque>

#include "sanitizer/engine/access_history.h"
#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/engine/id_table.h"
#include "sanitizer/log/record.h"

namespace streamsan {

struct allocation {
  // What a report says about it; ref.freed / ref.free_site once freed.
  allocation_ref ref;

  allocation* root = this;  // itself for a root (Note [Histories live on root allocations])
  std::uint64_t root_offset = 0;
  access_history history;  // used on roots only

  // Stream-ordered allocations: the allocating operation. Accesses must be
  // ordered after it (S-MEM-5).
  access_entry created;

  access_entry free_op;  // the freeing operation, once freed
  // Where it ran. A report names it from here, not from free_op's epoch,
  // whose slot may have changed owner since (Note [Retiring context slots]).
  context_kind free_context = context_kind::host_thread;
  stream_id free_stream{};

  // Note [Graph allocations]: made by a graph's alloc node, each launch
  // allocates it again; `unborn` until the first launch (it counts as freed
  // then, and a use is reported as before its allocation).
  bool graph = false;
  bool unborn = false;

  // Blocks whose root this is that are still in the table: a root is
  // forgotten only after them (they point to it).
  std::uint32_t dependents = 0;
  bool forget_when_unreferenced = false;
};

class allocation_table {
 public:
  explicit allocation_table(std::uint32_t remembered_dead) : remembered_dead_(remembered_dead) {}

  allocation* find(alloc_id id) const noexcept { return allocations_.find(id); }

  // A new allocation; a cached_block's parent is looked up and its root
  // shared. Returns nullptr when the id is already live (ignored).
  allocation* create(const alloc_record& r, std::uint64_t seq, stack_id site);

  // Marks it freed and remembers it for a bounded while (engine_options::
  // remembered_dead_objects). A root's history is dropped unless the free
  // only returned it to a cache.
  void mark_freed(allocation& a, bool keep_history);

  // Note [Graph allocations]: declared by a graph, allocated only when a
  // launch reaches its alloc node. A graph allocation is never forgotten
  // (the engine keeps the graphs that allocate it too).
  void mark_unborn(allocation& a);
  // A launch allocates it again: live, with an empty history.
  void revive(allocation& a);

  std::size_t live() const noexcept { return live_; }
  std::size_t remembered_dead() const noexcept { return allocations_.size() - live_; }

  template <class F>
  void for_each(F&& f) const {
    allocations_.for_each([&](alloc_id, const allocation& a) { f(a); });
  }

 private:
  void forget(allocation& a);

  std::uint32_t remembered_dead_;
  id_table<alloc_id, allocation> allocations_;
  std::deque<alloc_id> dead_;  // freed, oldest first
  std::size_t live_ = 0;
};

}  // namespace streamsan
