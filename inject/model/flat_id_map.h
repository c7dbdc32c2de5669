// Strong id -> value, for state that comes and goes at a high rate.
//
// Note [Flat tables by id]
// A caching allocator's block lives for one tensor, and the model keeps a
// little state per live block (Note [Graphs name segments, not blocks]).
// A std::unordered_map allocated a node for each block and freed it with the
// block: a heap allocation and a free per tensor, about 200 of the ~1,090
// instructions the model spent on a block's allocation and free, the
// recorder's part left out (BM_ModelledOperator under callgrind, host).
// This table keeps its entries in one array, open addressing with linear
// probing, and never shrinks: once it has grown to the number of blocks
// live at once, entering and leaving allocate nothing. Ids are handed out from 1 (recorder::new_alloc_id), so 0
// marks an empty slot. An erase shifts the entries of its probe run back
// (no tombstones), so a lookup stops at the first empty slot however long
// the table has churned. The engine's `id_table`
// (sanitizer/engine/id_table.h, Note [Paged id tables]) owns an object per
// id on the heap and releases a page per 256 ids once they are gone: fit
// for the engine's objects, but for a value of 16 bytes whose ids only grow
// it would allocate a page every 256 blocks.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace streamsan::injection {

template <class Id, class Value>
class flat_id_map {
  static_assert(std::is_same_v<std::underlying_type_t<Id>, std::uint32_t>);

 public:
  // Sets the value of `id` (not the empty id), entering it if absent.
  void set(Id id, const Value& v) {
    assert(raw_of(id) != 0);
    if ((size_ + 1) * 2 > slots_.size()) grow();
    slot& s = slots_[probe(raw_of(id))];
    if (s.key == 0) ++size_;
    s = slot{raw_of(id), v};
  }

  // The value of `id`, nullptr when absent.
  const Value* find(Id id) const noexcept {
    if (size_ == 0) return nullptr;
    const slot& s = slots_[probe(raw_of(id))];
    return s.key == 0 ? nullptr : &s.value;
  }

  // Removes `id`; false when absent.
  bool erase(Id id) noexcept {
    if (size_ == 0) return false;
    std::size_t hole = probe(raw_of(id));
    if (slots_[hole].key == 0) return false;
    close_hole(hole);
    --size_;
    return true;
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  // Slots held: grows with the most ids entered at once, never shrinks.
  std::size_t capacity() const noexcept { return slots_.size(); }

 private:
  struct slot {
    std::uint32_t key = 0;  // raw id; 0: empty
    Value value{};
  };

  static std::uint32_t raw_of(Id id) noexcept { return static_cast<std::uint32_t>(id); }
  std::size_t mask() const noexcept { return slots_.size() - 1; }
  // Fibonacci hashing: consecutive ids land far apart, whatever the size.
  std::size_t home(std::uint32_t key) const noexcept {
    return static_cast<std::size_t>((std::uint64_t{key} * 0x9e3779b97f4a7c15ull) >> 32) & mask();
  }
  // The slot holding `key`, else the empty slot that ends its probe run.
  std::size_t probe(std::uint32_t key) const noexcept {
    std::size_t i = home(key);
    while (slots_[i].key != 0 && slots_[i].key != key) i = (i + 1) & mask();
    return i;
  }
  // Empties slot `hole` and moves back the later entries of its run that
  // would no longer be found past it (backward-shift deletion).
  void close_hole(std::size_t hole) noexcept {
    for (std::size_t i = (hole + 1) & mask(); slots_[i].key != 0; i = (i + 1) & mask()) {
      // Distance from its home to i, and to the hole: it may move back only
      // if the hole lies on its way from home.
      const std::size_t from_home = (i - home(slots_[i].key)) & mask();
      if (from_home >= ((i - hole) & mask())) {
        slots_[hole] = slots_[i];
        hole = i;
      }
    }
    slots_[hole] = slot{};
  }
  void grow() {
    std::vector<slot> old(slots_.empty() ? 16 : slots_.size() * 2);
    old.swap(slots_);
    for (const slot& s : old) {
      if (s.key != 0) slots_[probe(s.key)] = s;
    }
  }

  std::vector<slot> slots_;  // a power of two in size, at most half full
  std::size_t size_ = 0;
};

}  // namespace streamsan::injection
