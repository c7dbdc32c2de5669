// A small direct-mapped table of the last entries found by key in a
// node-based map (Note [Recent handles] in handle_table.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace streamsan::injection {

// Remembers, for up to N keys (one per slot, by a hash of the key), a
// pointer to the entry found for it. The owner clears a key's slot when
// that entry is erased, and every slot when the map is cleared; a copied or
// moved table starts again with none, and so does the one moved from, as
// its pointers name another map's nodes. N is a power of two.
template <class T, std::size_t N = 4>
class recent_pointers {
 public:
  recent_pointers() = default;
  recent_pointers(const recent_pointers&) noexcept {}
  recent_pointers(recent_pointers&& other) noexcept { other.clear(); }
  recent_pointers& operator=(const recent_pointers&) noexcept {
    clear();
    return *this;
  }
  recent_pointers& operator=(recent_pointers&& other) noexcept {
    clear();
    other.clear();
    return *this;
  }

  // The entry remembered for `key`, else null.
  T* find(std::uint64_t key) const noexcept {
    const slot& s = slots_[slot_of(key)];
    return s.key == key ? s.found : nullptr;
  }
  void remember(std::uint64_t key, T* found) noexcept { slots_[slot_of(key)] = {key, found}; }
  void forget(std::uint64_t key) noexcept {
    slot& s = slots_[slot_of(key)];
    if (s.key == key) s = {};
  }
  void clear() noexcept { slots_ = {}; }

 private:
  static_assert(N > 0 && (N & (N - 1)) == 0);
  struct slot {
    std::uint64_t key = 0;
    T* found = nullptr;  // null: an empty slot
  };
  // Fibonacci hashing: the keys are addresses of driver objects, aligned.
  static std::size_t slot_of(std::uint64_t key) noexcept {
    return static_cast<std::size_t>((key * 0x9e3779b97f4a7c15ull) >> 58) & (N - 1);
  }
  std::array<slot, N> slots_{};
};

}  // namespace streamsan::injection
