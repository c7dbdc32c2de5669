#include "inject/model/allocation_map.h"

#include <algorithm>

namespace streamsan::injection {
namespace {

// Note [Block nodes are recycled]: how many freed blocks' nodes wait for
// the next blocks.
constexpr std::size_t max_spare_blocks = 64;

template <class Map>
auto containing(const Map& m, std::uint64_t address) {
  auto it = m.upper_bound(address);
  if (it == m.begin()) return m.end();
  --it;
  return allocation_holds(it->second, address) ? it : m.end();
}

std::uint64_t end_of(const allocation& a) { return a.base + (a.size == 0 ? 1 : a.size); }

// Takes the entries of `m` overlapping [begin, end) out: `take_out(it)`
// removes the entry at `it` and returns the iterator after it. Returns how
// many.
template <class F>
std::size_t retire_overlapping(std::map<std::uint64_t, allocation>& m, std::uint64_t begin,
                               std::uint64_t end, F&& take_out) {
  std::size_t retired = 0;
  // The first may start before begin.
  auto it = m.upper_bound(begin);
  if (it != m.begin()) {
    auto prev = std::prev(it);
    if (end_of(prev->second) > begin) it = prev;
  }
  while (it != m.end() && it->first < end) {
    it = take_out(it);
    ++retired;
  }
  return retired;
}

}  // namespace

std::size_t allocation_map::insert(const allocation& a) {
  const std::size_t retired = retire_overlapping(live_, a.base, end_of(a), [&](auto it) {
    const allocation old = it->second;
    if (!blocks_.empty()) retire_blocks(old.base, end_of(old));
    remember_freed(old);
    count_host_accessible(old, -1);
    return live_.erase(it);
  });
  allocation entry = a;
  entry.born = ++epoch_;
  entry.died = ~std::uint64_t{0};
  widen_bounds(entry);
  live_.emplace(entry.base, entry);
  count_host_accessible(entry, +1);
  return retired;
}

std::optional<allocation> allocation_map::erase(std::uint64_t base) {
  const auto it = live_.find(base);
  if (it == live_.end()) return std::nullopt;
  const allocation a = it->second;
  live_.erase(it);
  count_host_accessible(a, -1);
  if (!blocks_.empty()) retire_blocks(a.base, end_of(a));
  remember_freed(a);
  return a;
}

std::size_t allocation_map::insert_block(const allocation& a) {
  const std::size_t retired = retire_blocks(a.base, end_of(a));
  allocation entry = a;
  entry.born = ++epoch_;
  entry.died = ~std::uint64_t{0};
  widen_bounds(entry);
  if (spare_blocks_.empty()) {
    blocks_.emplace(entry.base, entry);
  } else {
    block_node node = std::move(spare_blocks_.back());
    spare_blocks_.pop_back();
    node.key() = entry.base;
    node.mapped() = entry;
    blocks_.insert(std::move(node));
  }
  return retired;
}

std::optional<allocation> allocation_map::erase_block(std::uint64_t base) {
  const auto it = blocks_.find(base);
  if (it == blocks_.end()) return std::nullopt;
  block_node node = blocks_.extract(it);
  const allocation a = node.mapped();
  remember_freed_block(std::move(node));
  return a;
}

std::size_t allocation_map::retire_blocks(std::uint64_t begin, std::uint64_t end) {
  return retire_overlapping(blocks_, begin, end, [this](auto it) {
    const auto next = std::next(it);
    remember_freed_block(blocks_.extract(it));
    return next;
  });
}

std::optional<allocation> allocation_map::erase(std::uint64_t base, alloc_id id) {
  const auto it = live_.find(base);
  if (it == live_.end() || it->second.id != id) return std::nullopt;
  return erase(base);
}

void allocation_map::widen_bounds(const allocation& a) noexcept {
  lowest_ = std::min(lowest_, a.base);
  highest_ = std::max(highest_, end_of(a));
}

// Note [Recent segment hits]
const allocation* allocation_map::find_live_segment(std::uint64_t address) const {
  if (outside_every_entry(address)) return nullptr;
  if (const allocation* a = recent_segment(address)) return a;
  const auto it = containing(live_, address);
  if (it == live_.end()) return nullptr;
  recent_.slots[recent_slot(address)] = {&it->second, epoch_};
  return &it->second;
}

const allocation* allocation_map::find_live(std::uint64_t address) const {
  if (outside_every_entry(address)) return nullptr;
  if (!blocks_.empty()) {
    if (const auto b = containing(blocks_, address); b != blocks_.end()) return &b->second;
  }
  return find_live_segment(address);
}

const allocation* allocation_map::find_freed(std::uint64_t address) const {
  const auto it = containing(freed_, address);
  return it == freed_.end() ? nullptr : &it->second;
}

std::optional<address_hit> allocation_map::find_inside(std::uint64_t address) const {
  if (const auto* a = find_live(address)) return address_hit{*a, address - a->base, false};
  const auto* f = find_freed(address);
  if (f == nullptr) return std::nullopt;
  return address_hit{*f, address - f->base, true};
}

// Note [A word's lookup copies three words]
std::optional<address_extent> allocation_map::find_extent_inside(std::uint64_t address) const {
  const allocation* a = find_live(address);
  if (a == nullptr) a = find_freed(address);
  if (a == nullptr) return std::nullopt;
  return extent_of(*a, address);
}

// Note [Blocks inside segments]: the live block if it was there at `epoch`,
// else the freed block that was. The ring holds blocks by the epoch they
// died at, newest first: only those that died after `epoch` can have held
// the address then, and blocks alive at one epoch do not overlap, so the
// first that contains it is the one.
const allocation* allocation_map::find_block_at(std::uint64_t address,
                                                std::uint64_t epoch) const {
  if (const auto b = containing(blocks_, address);
      b != blocks_.end() && b->second.born <= epoch) {
    return &b->second;
  }
  for (std::size_t i = 0; i < freed_ring_.size(); ++i) {
    const allocation& f = freed_block(i);
    if (f.died <= epoch) break;
    if (allocation_holds(f, address) && f.born <= epoch) return &f;
  }
  return nullptr;
}

const allocation& allocation_map::freed_block(std::size_t i) const noexcept {
  const std::size_t n = freed_ring_.size();
  return freed_ring_[(freed_ring_next_ + n - 1 - i) % n];
}

const allocation* allocation_map::find_at(std::uint64_t address, std::uint64_t epoch) const {
  if (outside_every_entry(address)) return nullptr;
  if (!blocks_.empty() || !freed_ring_.empty()) {
    if (const auto* b = find_block_at(address, epoch)) return b;
  }
  if (const auto* a = find_live_segment(address); a != nullptr && a->born <= epoch) return a;
  const auto it = containing(freed_, address);
  if (it == freed_.end()) return nullptr;
  const allocation& f = it->second;
  return f.born <= epoch && epoch < f.died ? &f : nullptr;
}

void allocation_map::remember_freed(allocation a) {
  a.died = ++epoch_;
  if (freed_capacity_ == 0) return;
  freed_[a.base] = a;
  freed_order_.emplace_back(a.base, a.id);
  while (freed_order_.size() > freed_capacity_) {
    const auto [base, id] = freed_order_.front();
    freed_order_.pop_front();
    // Only evict the entry if a later free of the same base did not replace it.
    if (const auto f = freed_.find(base); f != freed_.end() && f->second.id == id) {
      freed_.erase(f);
    }
  }
}

// Note [Block nodes are recycled]
// PyTorch's allocator hands out and takes back a block per tensor, and each
// went through three tree nodes: the live block's, the freed history's and
// the evicted one's, a heap allocation and a free each (the MLP loop's
// H200 profile had the block calls at about 4% of the program thread). A
// freed block's node is kept for the next block (a few of them: a step of
// a training loop frees and allocates in bursts), so no block allocates
// once the loop runs.
//
// Note [Freed blocks in a ring]
// The freed blocks' history was a multimap by base, with an insert and an
// eviction per freed block: two more walks of a 1,024-node tree, their
// nodes cold in the cache (1.5 to 1.9% of the MLP loop's program thread
// on an H200, 2026-11-28). It is only read to resolve a measured
// footprint at its launch's epoch (find_at), so the history is a ring of
// copies in the order the blocks were freed, which is the order of the
// epochs they died at: a lookup walks from the newest only as far as the
// blocks that died after its epoch (those freed since the launch).
void allocation_map::remember_freed_block(block_node node) {
  allocation& a = node.mapped();
  a.died = ++epoch_;
  if (freed_capacity_ != 0) {
    if (freed_ring_.size() < freed_capacity_) {
      freed_ring_.push_back(a);
    } else {
      freed_ring_[freed_ring_next_] = a;
    }
    freed_ring_next_ = (freed_ring_next_ + 1) % freed_capacity_;
  }
  if (spare_blocks_.size() < max_spare_blocks) spare_blocks_.push_back(std::move(node));
}

}  // namespace streamsan::injection
