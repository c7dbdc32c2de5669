#include "inject/model/allocation_map.h"

#include <gtest/gtest.h>

namespace streamsan::injection {
namespace {

TEST(AllocationMap, FindsTheAllocationContainingAnAddress) {
  allocation_map m;
  m.insert({alloc_id{1}, 1000, 100, memory_kind::device, 0});
  m.insert({alloc_id{2}, 2000, 50, memory_kind::pinned_host, 0});
  EXPECT_EQ(m.find(1000)->block.id, alloc_id{1});
  EXPECT_EQ(m.find(1099)->offset, 99u);
  EXPECT_FALSE(m.find(1100).has_value());
  EXPECT_FALSE(m.find(999).has_value());
  EXPECT_EQ(m.find(2049)->block.id, alloc_id{2});
  EXPECT_EQ(m.live_count(), 2u);
}

TEST(AllocationMap, FreedMemoryResolvesToTheFreedAllocationUntilReused) {
  allocation_map m;
  m.insert({alloc_id{1}, 1000, 100, memory_kind::device, 0});
  ASSERT_TRUE(m.erase(1000).has_value());
  auto hit = m.find(1010);
  ASSERT_TRUE(hit.has_value());
  EXPECT_TRUE(hit->freed);
  EXPECT_EQ(hit->block.id, alloc_id{1});
  // The driver hands the range out again: the new allocation wins.
  m.insert({alloc_id{7}, 1000, 100, memory_kind::device, 0});
  hit = m.find(1010);
  EXPECT_FALSE(hit->freed);
  EXPECT_EQ(hit->block.id, alloc_id{7});
  EXPECT_EQ(m.find_live(1010)->id, alloc_id{7});
}

TEST(AllocationMap, EraseOfAnUnknownBaseChangesNothing) {
  allocation_map m;
  m.insert({alloc_id{1}, 1000, 100, memory_kind::device, 0});
  EXPECT_FALSE(m.erase(1010).has_value());
  EXPECT_FALSE(m.erase(0).has_value());
  EXPECT_EQ(m.live_count(), 1u);
}

TEST(AllocationMap, OverlappingInsertRetiresTheStaleEntry) {
  allocation_map m;
  m.insert({alloc_id{1}, 1000, 100, memory_kind::device, 0});
  EXPECT_EQ(m.insert({alloc_id{2}, 1050, 100, memory_kind::device, 0}), 1u);
  EXPECT_EQ(m.live_count(), 1u);
  EXPECT_EQ(m.find(1060)->block.id, alloc_id{2});
  // The address below the new block still finds the retired one, as freed.
  const auto old = m.find(1010);
  ASSERT_TRUE(old.has_value());
  EXPECT_TRUE(old->freed);
}

TEST(AllocationMap, FreedHistoryIsBounded) {
  allocation_map m(2);
  for (std::uint32_t i = 1; i <= 3; ++i) {
    m.insert({alloc_id{i}, 1000 * i, 10, memory_kind::device, 0});
    m.erase(1000 * i);
  }
  EXPECT_EQ(m.freed_count(), 2u);
  EXPECT_FALSE(m.find(1000).has_value());  // evicted
  EXPECT_EQ(m.find(3000)->block.id, alloc_id{3});
}

TEST(AllocationMap, ZeroSizedAllocationOwnsItsBase) {
  allocation_map m;
  m.insert({alloc_id{1}, 1000, 0, memory_kind::device, 0});
  EXPECT_EQ(m.find(1000)->block.id, alloc_id{1});
  EXPECT_FALSE(m.find(1001).has_value());
}

}  // namespace
}  // namespace streamsan::injection
