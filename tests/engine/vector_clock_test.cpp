#include "sanitizer/engine/vector_clock.h"

#include <gtest/gtest.h>

namespace streamsan {
namespace {

TEST(Epoch, PacksSlotAndClock) {
  const epoch e(7, 123456789);
  EXPECT_EQ(e.slot(), 7u);
  EXPECT_EQ(e.clock(), 123456789u);
  const epoch top(epoch::max_slot, epoch::max_clock);
  EXPECT_EQ(top.slot(), epoch::max_slot);
  EXPECT_EQ(top.clock(), epoch::max_clock);
  EXPECT_TRUE(epoch().is_none());
  EXPECT_FALSE(e.is_none());
}

TEST(VectorClock, StartsAtZeroEverywhere) {
  const vector_clock c;
  EXPECT_EQ(c.get(0), 0u);
  EXPECT_EQ(c.get(1000), 0u);
  EXPECT_EQ(c.size(), 0u);
}

TEST(VectorClock, TickAdvancesOnlyTheOwnComponent) {
  vector_clock c;
  EXPECT_EQ(c.tick(2), epoch(2, 1));
  EXPECT_EQ(c.tick(2), epoch(2, 2));
  EXPECT_EQ(c.get(2), 2u);
  EXPECT_EQ(c.get(0), 0u);
  EXPECT_EQ(c.get(1), 0u);
}

TEST(VectorClock, MakePresentAddsAZeroComponentThatTicksInPlace) {
  vector_clock c;
  c.make_present(3);
  EXPECT_EQ(c.size(), 4u);
  EXPECT_EQ(c.get(3), 0u);
  EXPECT_EQ(c, vector_clock{});  // a zero component is no component
  EXPECT_EQ(c.tick_present(3), epoch(3, 1));
  EXPECT_EQ(c.tick_present(3), epoch(3, 2));
  c.make_present(1);  // never shrinks
  EXPECT_EQ(c.size(), 4u);
  EXPECT_EQ(c.get(3), 2u);
}

TEST(VectorClock, JoinIsPointwiseMax) {
  vector_clock a;
  a.set(0, 5);
  a.set(1, 1);
  vector_clock b;
  b.set(0, 3);
  b.set(1, 4);
  b.set(3, 9);
  EXPECT_TRUE(a.join(b));
  EXPECT_EQ(a.get(0), 5u);
  EXPECT_EQ(a.get(1), 4u);
  EXPECT_EQ(a.get(2), 0u);
  EXPECT_EQ(a.get(3), 9u);
  // b is unchanged by the join.
  EXPECT_EQ(b.get(0), 3u);
}

TEST(VectorClock, JoinReportsWhetherAnythingChanged) {
  vector_clock a;
  a.set(0, 5);
  a.set(1, 5);
  vector_clock smaller;
  smaller.set(1, 2);
  EXPECT_FALSE(a.join(smaller));
  EXPECT_FALSE(a.join(a));
  vector_clock larger;
  larger.set(1, 6);
  EXPECT_TRUE(a.join(larger));
  EXPECT_FALSE(a.join(larger));
}

TEST(VectorClock, JoinIsCommutativeAndIdempotent) {
  vector_clock a;
  a.set(0, 1);
  a.set(2, 7);
  vector_clock b;
  b.set(1, 3);
  b.set(2, 2);
  vector_clock ab = a;
  ab.join(b);
  vector_clock ba = b;
  ba.join(a);
  EXPECT_EQ(ab, ba);
  vector_clock twice = ab;
  twice.join(b);
  EXPECT_EQ(twice, ab);
}

TEST(VectorClock, CoversExactlyTheEpochsAtOrBelowItsComponent) {
  vector_clock c;
  c.set(1, 4);
  EXPECT_TRUE(c.covers(epoch(1, 3)));
  EXPECT_TRUE(c.covers(epoch(1, 4)));
  EXPECT_FALSE(c.covers(epoch(1, 5)));
  EXPECT_FALSE(c.covers(epoch(0, 1)));
  EXPECT_FALSE(c.covers(epoch(9, 1)));  // a slot beyond the vector
}

TEST(VectorClock, CoversItsOwnPastTicks) {
  vector_clock c;
  const epoch first = c.tick(0);
  c.tick(0);
  EXPECT_TRUE(c.covers(first));
}

TEST(VectorClock, EqualityIgnoresTrailingZeros) {
  vector_clock a;
  a.set(0, 1);
  vector_clock b;
  b.set(0, 1);
  b.set(5, 0);
  b.set(6, 1);
  EXPECT_NE(a, b);
  b.set(6, 0);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(a.less_equal(b));
}

TEST(VectorClock, LessEqualIsAPartialOrder) {
  vector_clock a;
  a.set(0, 2);
  vector_clock b;
  b.set(1, 2);
  EXPECT_FALSE(a.less_equal(b));
  EXPECT_FALSE(b.less_equal(a));
  vector_clock both = a;
  both.join(b);
  EXPECT_TRUE(a.less_equal(both));
  EXPECT_TRUE(b.less_equal(both));
}

}  // namespace
}  // namespace streamsan
