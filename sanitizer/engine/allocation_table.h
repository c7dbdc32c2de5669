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

#include <cstddef>
#include <cstdint>
#include <deque>

#include "sanitizer/engine/access_history.h"
#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/engine/id_table.h"
#include "sanitizer/log/record.h"

namespace streamsan {

// Note [What every access reads of its allocation]
// Every access reads, of its allocation and its root, `freed`, `root`,
// `root_offset`, `created_when` and the history's first chunk (the vector's
// begin and end: access_history::apply), and a write to a history of one
// segment also its other chunks, its table of writes and when to compact it
// (access_history::store_write). Those were spread over five cache lines:
// `ref.freed` and `root` in one, `root_offset` and the first chunk in the
// next, the other chunks and the table of writes further on, and
// `created.when` behind the history (engine_replay under callgrind,
// 2026-12-02: an L1 miss per access on `ref.freed` and one on
// `created.when`, a third of one on `root_offset`, about two more per
// write). So the allocation is 64-byte aligned and starts with them: a
// read reads its first line, a write its first two (the order of
// access_history's first members). `freed` and `created_when` are copies
// of `ref.freed` and `created.when`, which reports read; set_freed(),
// set_created() and set_created_when() keep them equal, and nothing else
// writes either (nor `unusual`, which they keep as well). engine_replay:
// 18.48 -> 15.90 L1 read misses per launch with the first line, 13.72
// with the history's order; the same instructions. Since Note [The only segment kept inside]
// (access_history.h) the history starts on the second line with its only
// segment, and the members a write reads next are the third: a read reads
// the first two lines of a root of one segment, a write three.
struct alignas(64) allocation {
  allocation* root = this;  // itself for a root (Note [Histories live on root allocations])
  std::uint64_t root_offset = 0;
  // Stream-ordered allocations: the allocating operation's epoch (none
  // otherwise); accesses must be ordered after it (S-MEM-5). created.when.
  epoch created_when;
  bool freed = false;  // ref.freed
  // freed || !created_when.is_none(): an access to it, or to a block of it
  // if it is the root, takes the slow checks (Note [One test for the
  // unusual allocation]).
  bool unusual = false;

  // Rarely read; here, they fill the first line's rest instead of growing
  // the allocation by a line at its end (Note [The only segment kept
  // inside] puts the history on a line of its own).
  // Where the freeing operation ran. A report names it from here, not from
  // free_op's epoch, whose slot may have changed owner since (Note
  // [Retiring context slots]).
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

  access_history history;  // used on roots only; its only segment in the second line

  // What a report says about it; ref.freed / ref.free_site once freed.
  allocation_ref ref;

  // The allocating operation, whole, for reports (its epoch: created_when).
  access_entry created;

  access_entry free_op;  // the freeing operation, once freed (where: free_context)

  // Note [What every access reads of its allocation]: the copies follow.
  void set_freed(bool now) noexcept {
    freed = now;
    ref.freed = now;
    unusual = freed || !created_when.is_none();
  }
  void set_created(const access_entry& op) noexcept {
    created = op;
    set_created_when(op.when);
  }
  void set_created_when(epoch when) noexcept {
    created.when = when;
    created_when = when;
    unusual = freed || !created_when.is_none();
  }
};

static_assert(offsetof(allocation, history) == 64,
              "Note [What every access reads of its allocation]: the first line, then the history");

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
