// Note [Looking up the past]
// A launch's measured footprint comes back after the launch (Note [Measured
// footprints arrive late]), when the memory it touched may have been freed
// and handed out again. Every insert and retirement advances the map's
// epoch; an entry remembers the epochs of its life, and find_at(address,
// epoch) answers with the allocation that held the address then: the live
// one if it was already there, else one from the freed history that was.
//
// Address -> allocation resolution for the injection library: an interval map
// of the live allocations plus a bounded history of freed ones, so that a
// kernel argument that still points into freed memory is attributed to the
// allocation it came from (use after free) instead of being ignored.
//
// Note [Addresses are looked up, never kept]
// The map answers "which allocation holds this address now"; the answer is an
// alloc_id, and only ids go into records. An address range that is freed and
// handed out again resolves to the new allocation's id from then on; the old
// id survives only in the freed history, which is keyed by nothing but the
// address range it covered and is evicted oldest first.
//
// Note [Blocks inside segments]
// A caching allocator (PyTorch's, through the operator hook's allocator
// tracker: docs/pytorch.md) carves blocks out of the segments it got from
// cudaMalloc. A block is entered with insert_block() inside the live
// allocation that holds it (its segment, or a cuMemMap mapping) and lives
// apart from the top-level allocations, so the segment stays live and an
// address resolves to the innermost: the live block that holds it, else
// the segment (the bytes are in the allocator's cache, not freed memory).
// Blocks carry epochs like everything else (Note [Looking up the past]):
// find_at() answers with the block that held the address at the epoch,
// live or from the freed blocks' history (bounded, evicted oldest first;
// a block that left it resolves to its segment, which still holds the
// bytes). Blocks come and go at every tensor, and a freed block's bytes
// are carved again at once, often at the same base, so that history keeps
// every freed block, not the last per base (Note [Freed blocks in a
// ring]). Blocks
// inside a top-level allocation that goes (a free, or an insert over it)
// go with it. When no block is ever entered (every program but PyTorch's
// with the native hook) every lookup is the segment-only one: the block
// maps are empty and looked at once.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "sanitizer/log/ids.h"
#include "sanitizer/log/record.h"

namespace streamsan::injection {

struct allocation {
  alloc_id id{};
  std::uint64_t base = 0;
  std::uint64_t size = 0;
  memory_kind kind = memory_kind::device;
  std::int32_t device = 0;
  // The map's epochs (Note [Looking up the past]) at which it was inserted
  // and retired; set by the map.
  std::uint64_t born = 0;
  std::uint64_t died = ~std::uint64_t{0};
};

struct address_hit {
  allocation block;
  std::uint64_t offset = 0;  // address - base
  bool freed = false;
};

// Whether `address` lies in `a`: a zero-sized allocation still owns its
// base address.
inline bool allocation_holds(const allocation& a, std::uint64_t address) noexcept {
  return address == a.base || address - a.base < a.size;
}

// What an inferred access takes of find()'s answer (Note [A word's lookup
// copies three words]).
struct address_extent {
  alloc_id id{};
  std::uint64_t offset = 0;  // address - base
  std::uint64_t rest = 0;    // the allocation's bytes from the address on
};

class allocation_map {
 public:
  explicit allocation_map(std::size_t freed_history = 1024) : freed_capacity_(freed_history) {}

  // Registers a live allocation. An overlapping live entry (memory the
  // driver handed out again without a free we saw) is retired to the freed
  // history first; returns how many were retired that way.
  std::size_t insert(const allocation& a);

  // Removes the live allocation that starts at `base` and keeps it in the
  // freed history; nullopt when no live allocation starts there.
  std::optional<allocation> erase(std::uint64_t base);
  // The same, only when that allocation is `id` (memory a graph's launch
  // frees may already have been handed to a later allocation node).
  std::optional<allocation> erase(std::uint64_t base, alloc_id id);

  // The live allocation containing `address`, else the most recently freed
  // one that contained it, else nullopt. Inline up to the bounds check: a
  // launch's words are mostly no address (Note [Most words are not
  // addresses]), and a call per word cost more than the check.
  std::optional<address_hit> find(std::uint64_t address) const {
    if (outside_every_entry(address)) return std::nullopt;
    return find_inside(address);
  }

  // Note [A word's lookup copies three words]
  // A launch looks up every word that may be an address, and find() copies
  // the allocation it finds (seven words) into its answer, which the
  // inference then copies again: on the launch loop, a third of the
  // inference's instructions. The inference needs three words of it, so
  // find_extent() answers with those, from the same entry find() finds.
  // A remembered segment (Note [Recent segment hits]) is answered inline.
  std::optional<address_extent> find_extent(std::uint64_t address) const {
    if (outside_every_entry(address)) return std::nullopt;
    if (blocks_.empty()) {
      if (const allocation* a = recent_segment(address)) return extent_of(*a, address);
    }
    return find_extent_inside(address);
  }

  // The live allocation containing `address` only: the innermost (a live
  // block, else its segment).
  const allocation* find_live(std::uint64_t address) const;
  // The live top-level allocation containing `address` (a block's segment).
  const allocation* find_live_segment(std::uint64_t address) const;

  // Note [Blocks inside segments]: registers block `a`, which must lie in
  // the live top-level allocation `parent` (the caller checks). Live blocks
  // overlapping it (a free that was not seen) are retired first; returns
  // how many.
  std::size_t insert_block(const allocation& a);
  // Retires the live block that starts at `base`; nullopt when none does.
  std::optional<allocation> erase_block(std::uint64_t base);

  // The allocation that contained `address` at `epoch` (an earlier
  // epoch()), live or freed since; nullptr when none (or when its entry has
  // left the bounded freed history).
  const allocation* find_at(std::uint64_t address, std::uint64_t epoch) const;
  // The current epoch: advanced by every insert and retirement.
  std::uint64_t epoch() const noexcept { return epoch_; }
  // The live top-level allocations overlapping [begin, end), in address
  // order (blocks are not visited).
  template <class F>
  void for_each_live_overlapping(std::uint64_t begin, std::uint64_t end, F&& f) const {
    auto it = live_.upper_bound(begin);
    if (it != live_.begin()) --it;
    for (; it != live_.end() && it->first < end; ++it) {
      const allocation& a = it->second;
      if (a.base + (a.size == 0 ? 1 : a.size) > begin) f(a);
    }
  }

  std::size_t live_count() const noexcept { return live_.size() + blocks_.size(); }
  // The live top-level allocations the host can access (host_accessible():
  // pinned, pageable, managed). Note [No host memory, no host race]
  // (cuda_model_measurement.cpp): while there are none, no launch's word
  // can point into one, and a launch need not be looked at word by word.
  std::size_t live_host_accessible_count() const noexcept { return live_host_accessible_; }
  std::size_t freed_count() const noexcept { return freed_order_.size() + freed_ring_.size(); }
  std::size_t live_block_count() const noexcept { return blocks_.size(); }

 private:
  // Note [Most words are not addresses]
  // A kernel's by-value structs (PyTorch's elementwise kernels pass sizes,
  // strides and offsets beside their pointers: hundreds of words) are looked
  // up word by word, twice per launch, and most words are small integers or
  // float bits far from any allocation. Every entry the map has ever held
  // lies in [lowest_, highest_) (never narrowed: freed entries stay looked
  // up), so a word outside it is answered without a tree walk.
  bool outside_every_entry(std::uint64_t address) const noexcept {
    return address < lowest_ || address >= highest_;
  }
  void widen_bounds(const allocation& a) noexcept;
  void count_host_accessible(const allocation& a, int change) noexcept {
    if (!host_accessible(a.kind)) return;
    if (change > 0) {
      ++live_host_accessible_;
    } else {
      --live_host_accessible_;
    }
  }
  std::optional<address_hit> find_inside(std::uint64_t address) const;
  std::optional<address_extent> find_extent_inside(std::uint64_t address) const;
  static address_extent extent_of(const allocation& a, std::uint64_t address) noexcept {
    const std::uint64_t offset = address - a.base;
    return address_extent{a.id, offset, a.size > offset ? a.size - offset : 0};
  }
  // The most recently freed allocation that contained `address`, else null.
  const allocation* find_freed(std::uint64_t address) const;

  void remember_freed(allocation a);
  // Note [Block nodes are recycled], Note [Freed blocks in a ring]
  using block_node = std::map<std::uint64_t, allocation>::node_type;
  void remember_freed_block(block_node node);
  // The i-th freed block of the ring, newest first (i < freed_ring_.size()).
  const allocation& freed_block(std::size_t i) const noexcept;
  // Retires the live blocks overlapping [begin, end); returns how many.
  std::size_t retire_blocks(std::uint64_t begin, std::uint64_t end);
  const allocation* find_block_at(std::uint64_t address, std::uint64_t epoch) const;

  // Note [Recent segment hits]
  // A launch looks up each pointer word of its arguments, and a launch-bound
  // loop passes the same few pointers over and over. Between two launches
  // the driver runs its own launch path, which evicts the tree's nodes (on
  // an H200 our work on the launch loop's thread costs about four times
  // what it costs warm on the host, and on the host, evicting the caches
  // between launches makes it two to three times dearer: Note [Our launch
  // path with cold caches] in bench/injection/source_bench.cpp), and a
  // lookup walked the map's header, three or four inner nodes and the leaf.
  // So find_live_segment() remembers its hits in a small direct-mapped
  // table, indexed by a hash of the address's 64-byte line: a slot holds
  // the live allocation found there and the epoch it was found at. Every
  // insert and retirement advances the epoch (Note [Looking up the past]),
  // so a slot is only trusted while nothing has changed since, when its
  // allocation is still live and still the only live top-level allocation
  // that holds the address (live ones never overlap). A hit reads the slot
  // and the leaf. Blocks (Note [Blocks inside segments]) are not
  // remembered: find_live() asks them first, as before. The map is only used
  // under the model's lock, so the table needs none of its own.
  struct recent_hit {
    const allocation* segment = nullptr;
    std::uint64_t epoch = 0;
  };
  static constexpr std::size_t recent_hits_ = 64;
  // The hits point into the nodes of the map that found them: a moved map
  // starts again with none, and so does the map it was moved from.
  struct recent_table {
    std::array<recent_hit, recent_hits_> slots{};
    recent_table() = default;
    recent_table(recent_table&& other) noexcept { other.slots = {}; }
    recent_table& operator=(recent_table&& other) noexcept {
      slots = {};
      other.slots = {};
      return *this;
    }
  };
  // Fibonacci hashing of the line: bases a few lines apart (small buffers
  // side by side, slices of one buffer) land in different slots.
  static std::size_t recent_slot(std::uint64_t address) noexcept {
    return static_cast<std::size_t>(((address >> 6) * 0x9e3779b97f4a7c15ull) >> 58);
  }
  // The segment remembered for `address` while nothing changed since, else
  // null.
  const allocation* recent_segment(std::uint64_t address) const noexcept {
    const recent_hit& slot = recent_.slots[recent_slot(address)];
    if (slot.epoch != epoch_ || slot.segment == nullptr) return nullptr;
    return allocation_holds(*slot.segment, address) ? slot.segment : nullptr;
  }

  std::uint64_t epoch_ = 0;
  std::size_t live_host_accessible_ = 0;  // live_'s entries the host can access
  std::uint64_t lowest_ = ~std::uint64_t{0};  // Note [Most words are not addresses]
  std::uint64_t highest_ = 0;
  // Note [Blocks inside segments]: live blocks, by base. Beside the epoch
  // and bounds, which every lookup reads with it.
  std::map<std::uint64_t, allocation> blocks_;
  mutable recent_table recent_;
  std::map<std::uint64_t, allocation> live_;  // by base
  // Freed ranges by base; a later free of the same range replaces the entry.
  std::map<std::uint64_t, allocation> freed_;
  std::deque<std::pair<std::uint64_t, alloc_id>> freed_order_;  // oldest first
  std::size_t freed_capacity_;
  // Note [Freed blocks in a ring]: the last freed_capacity_ freed blocks,
  // in the order they were freed; once full, the next overwrites the
  // oldest, at freed_ring_next_.
  std::vector<allocation> freed_ring_;
  std::size_t freed_ring_next_ = 0;
  std::vector<block_node> spare_blocks_;  // for the next insert_block
};

}  // namespace streamsan::injection
