#include "sanitizer/engine/vector_clock.h"

namespace streamsan {

void vector_clock::set(context_slot slot, std::uint64_t value) {
  if (slot >= clocks_.size()) {
    if (value == 0) return;
    clocks_.resize(std::size_t{slot} + 1, 0);
  }
  clocks_[slot] = component_of(slot, value);
}

bool vector_clock::join(const vector_clock& other) {
  const std::size_t n = other.clocks_.size();
  if (n > clocks_.size()) clocks_.resize(n, 0);
  std::uint64_t* mine = clocks_.data();
  const std::uint64_t* theirs = other.clocks_.data();
  // Branch-free so that the loop vectorizes; contexts are few, so this is a
  // handful of instructions.
  std::uint64_t grew = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t a = mine[i];
    const std::uint64_t b = theirs[i];
    grew |= static_cast<std::uint64_t>(b > a);
    mine[i] = a > b ? a : b;
  }
  return grew != 0;
}

bool vector_clock::less_equal(const vector_clock& other) const noexcept {
  for (std::size_t i = 0; i < clocks_.size(); ++i) {
    // Note [Components stored as epochs]: of one slot, they compare as values.
    if (clocks_[i] > (i < other.clocks_.size() ? other.clocks_[i] : 0)) return false;
  }
  return true;
}

bool operator==(const vector_clock& a, const vector_clock& b) noexcept {
  return a.less_equal(b) && b.less_equal(a);
}

}  // namespace streamsan
