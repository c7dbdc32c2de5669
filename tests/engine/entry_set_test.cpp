// A segment's read or atomic set (sanitizer/engine/entry_set.h).
#include "sanitizer/engine/entry_set.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <utility>
#include <vector>

#include "sanitizer/engine/access_history.h"

namespace streamsan {
namespace {

access_entry entry(std::uint64_t seq) {
  access_entry e;
  e.when = epoch(1, seq);
  e.seq = seq;
  return e;
}

std::vector<std::uint64_t> seqs(const entry_set& set) {
  std::vector<std::uint64_t> out;
  for (const access_entry& e : set) out.push_back(e.seq);
  return out;
}

bool on_own_lines(const entry_set& set) {
  for (const access_entry& e : set) {
    if (reinterpret_cast<std::uintptr_t>(&e) % entry_set::line != 0) return false;
  }
  return true;
}

// Note [One cache line per stored access]
TEST(EntrySet, EveryEntryStartsACacheLine) {
  entry_set set;
  for (std::uint64_t i = 1; i <= 9; ++i) {
    set.push_back(entry(i));
    ASSERT_TRUE(on_own_lines(set)) << i << " entries";
  }
  const entry_set copy = set;
  EXPECT_TRUE(on_own_lines(copy));
}

TEST(EntrySet, KeepsItsEntriesInOrderAcrossGrowth) {
  entry_set set;
  EXPECT_TRUE(set.empty());
  for (std::uint64_t i = 1; i <= 5; ++i) set.push_back(entry(i));
  EXPECT_EQ(seqs(set), (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(set.size(), 5u);
  EXPECT_EQ(set.capacity(), 8u);  // 1, 2, 4, 8
  EXPECT_EQ(set.back().seq, 5u);
  set[1] = set.back();
  set.pop_back();
  EXPECT_EQ(seqs(set), (std::vector<std::uint64_t>{1, 5, 3, 4}));
}

// Like std::vector's clear: a segment's reads fill again after each write,
// without allocating.
TEST(EntrySet, ClearKeepsTheStorage) {
  entry_set set;
  set.push_back(entry(1));
  set.push_back(entry(2));
  const access_entry* storage = set.begin();
  set.clear();
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.capacity(), 2u);
  set.push_back(entry(3));
  EXPECT_EQ(set.begin(), storage);
  EXPECT_EQ(seqs(set), (std::vector<std::uint64_t>{3}));
}

TEST(EntrySet, CopiesAreIndependentAndEqual) {
  entry_set a;
  a.push_back(entry(1));
  a.push_back(entry(2));
  entry_set b = a;
  EXPECT_EQ(a, b);
  EXPECT_NE(a.begin(), b.begin());
  b[0].seq = 7;
  EXPECT_FALSE(a == b);
  EXPECT_EQ(a[0].seq, 1u);
  entry_set c;
  c.push_back(entry(9));
  c = a;  // into storage that is large enough
  EXPECT_EQ(c, a);
  entry_set d;
  d = a;  // into no storage
  EXPECT_EQ(d, a);
  EXPECT_EQ(d.capacity(), 2u);
  a = a;  // self-assignment keeps it
  EXPECT_EQ(seqs(a), (std::vector<std::uint64_t>{1, 2}));
}

TEST(EntrySet, EqualityComparesSizesAndEntries) {
  entry_set a;
  entry_set b;
  EXPECT_EQ(a, b);
  a.push_back(entry(1));
  EXPECT_FALSE(a == b);
  b.push_back(entry(1));
  EXPECT_EQ(a, b);
  b.push_back(entry(2));
  EXPECT_FALSE(a == b);
}

TEST(EntrySet, MovesHandTheStorageOver) {
  entry_set a;
  a.push_back(entry(1));
  const access_entry* storage = a.begin();
  entry_set b = std::move(a);
  EXPECT_EQ(b.begin(), storage);
  EXPECT_EQ(seqs(b), (std::vector<std::uint64_t>{1}));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(a.capacity(), 0u);
  entry_set c;
  c.push_back(entry(5));
  c = std::move(b);
  EXPECT_EQ(c.begin(), storage);
  EXPECT_EQ(seqs(c), (std::vector<std::uint64_t>{1}));
}

// A set whose storage fits its entries hands it over; one with room to
// spare (or cleared) is copied into storage that fits, and left as it was.
TEST(EntrySet, TakeOrCopyTakesOnlyFittedStorage) {
  entry_set fitted;
  for (std::uint64_t i = 1; i <= 4; ++i) fitted.push_back(entry(i));
  const access_entry* storage = fitted.begin();
  const entry_set taken = entry_set::take_or_copy(fitted);
  EXPECT_EQ(taken.begin(), storage);
  EXPECT_EQ(seqs(taken), (std::vector<std::uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(fitted.capacity(), 0u);

  entry_set roomy;
  for (std::uint64_t i = 1; i <= 3; ++i) roomy.push_back(entry(i));
  roomy.pop_back();  // 4 lines for 2 entries
  const entry_set copied = entry_set::take_or_copy(roomy);
  EXPECT_NE(copied.begin(), roomy.begin());
  EXPECT_EQ(copied.capacity(), 2u);  // what any copy takes
  EXPECT_EQ(seqs(copied), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(seqs(roomy), (std::vector<std::uint64_t>{1, 2}));

  roomy.clear();
  const entry_set empty = entry_set::take_or_copy(roomy);
  EXPECT_EQ(empty.capacity(), 0u);
  EXPECT_EQ(roomy.capacity(), 4u);

  entry_set none;
  EXPECT_EQ(entry_set::take_or_copy(none).capacity(), 0u);
}

// Note [One cache line per stored access]: checking an access reads the
// segment's first line only until it meets an unordered entry.
TEST(EntrySet, ASegmentsBoundsSetsAndWriteEpochShareItsFirstLine) {
  std::vector<access_history::segment> segments(3);
  for (const auto& s : segments) {
    const auto base = reinterpret_cast<std::uintptr_t>(&s);
    EXPECT_EQ(base % entry_set::line, 0u);
    EXPECT_LT(reinterpret_cast<std::uintptr_t>(&s.write_when) + sizeof(epoch) - base,
              entry_set::line + 1);
    EXPECT_LT(reinterpret_cast<std::uintptr_t>(&s.atomics) + sizeof(entry_set) - base,
              entry_set::line + 1);
  }
}

// Note [Read sets from a pool of lines]: a copy takes a power of two of
// lines, so that its storage goes back to the pool it came from.
TEST(EntrySet, ACopyOfAnyCountHoldsEveryEntryInAPowerOfTwo) {
  for (std::uint64_t n = 1; n <= 19; ++n) {
    entry_set from;
    for (std::uint64_t i = 1; i <= n; ++i) from.push_back(entry(i));
    entry_set copy(from);
    EXPECT_EQ(seqs(copy), seqs(from)) << n;
    EXPECT_GE(copy.capacity(), n);
    EXPECT_TRUE(std::has_single_bit(copy.capacity())) << copy.capacity();
    EXPECT_TRUE(on_own_lines(copy));
    // Written up to its capacity and grown: nothing else is overwritten.
    entry_set other(from);
    const std::size_t past_capacity = copy.capacity() + 1;
    while (copy.size() < past_capacity) copy.push_back(entry(100 + copy.size()));
    EXPECT_EQ(seqs(other), seqs(from)) << n;
  }
}

}  // namespace
}  // namespace streamsan
