#include "inject/model/allocation_map.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

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

// Note [Most words are not addresses]: the bounds that answer words far
// from every entry never narrow, so the highest and lowest allocations,
// freed, are still found, and at their epochs.
TEST(AllocationMap, TheOutermostAllocationsFreedAreStillFound) {
  allocation_map m;
  EXPECT_FALSE(m.find(0).has_value());
  EXPECT_EQ(m.find_live(~std::uint64_t{0}), nullptr);
  m.insert({alloc_id{1}, 1000, 100, memory_kind::device, 0});
  const std::uint64_t epoch = m.epoch();
  m.insert({alloc_id{2}, 5000, 100, memory_kind::device, 0});
  m.insert({alloc_id{3}, 9000, 100, memory_kind::device, 0});
  ASSERT_TRUE(m.erase(1000).has_value());
  ASSERT_TRUE(m.erase(9000).has_value());
  EXPECT_EQ(m.find(1000)->block.id, alloc_id{1});
  EXPECT_TRUE(m.find(9099)->freed);
  EXPECT_EQ(m.find_at(1050, epoch)->id, alloc_id{1});
  EXPECT_FALSE(m.find(9100).has_value());
  EXPECT_FALSE(m.find(999).has_value());
  EXPECT_EQ(m.find_live(9050), nullptr);
  EXPECT_EQ(m.find_live_segment(5050)->id, alloc_id{2});
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

TEST(AllocationMap, CountsTheLiveAllocationsTheHostCanAccess) {
  allocation_map m;
  m.insert({alloc_id{1}, 1000, 100, memory_kind::device, 0});
  EXPECT_EQ(m.live_host_accessible_count(), 0u);
  m.insert({alloc_id{2}, 2000, 100, memory_kind::pinned_host, 0});
  m.insert({alloc_id{3}, 3000, 100, memory_kind::managed, 0});
  m.insert({alloc_id{4}, 4000, 100, memory_kind::pageable_host, 0});
  m.insert_block({alloc_id{5}, 1000, 10, memory_kind::cached_block, 0});
  EXPECT_EQ(m.live_host_accessible_count(), 3u);
  ASSERT_TRUE(m.erase(2000).has_value());
  EXPECT_EQ(m.live_host_accessible_count(), 2u);
  // Retired by an overlapping insert, as by a free.
  EXPECT_EQ(m.insert({alloc_id{6}, 3050, 100, memory_kind::device, 0}), 1u);
  EXPECT_EQ(m.live_host_accessible_count(), 1u);
  EXPECT_FALSE(m.erase(2000).has_value());
  EXPECT_EQ(m.live_host_accessible_count(), 1u);
  ASSERT_TRUE(m.erase(4000, alloc_id{4}).has_value());
  EXPECT_EQ(m.live_host_accessible_count(), 0u);
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

// ---- Note [Blocks inside segments] ----

TEST(AllocationMap, AnAddressInALiveBlockResolvesToTheBlockElseToItsSegment) {
  allocation_map m;
  m.insert({alloc_id{1}, 1000, 1000, memory_kind::device, 0});
  m.insert_block({alloc_id{2}, 1200, 100, memory_kind::cached_block, 0});
  EXPECT_EQ(m.find_live(1250)->id, alloc_id{2});
  EXPECT_EQ(m.find(1250)->offset, 50u);
  EXPECT_EQ(m.find_live(1300)->id, alloc_id{1});  // past the block: the segment
  EXPECT_EQ(m.find_live(1199)->id, alloc_id{1});
  EXPECT_EQ(m.find_live_segment(1250)->id, alloc_id{1});
  EXPECT_EQ(m.live_count(), 2u);
  // Freed into the cache: the bytes are the segment's again, not freed memory.
  ASSERT_TRUE(m.erase_block(1200).has_value());
  const auto hit = m.find(1250);
  ASSERT_TRUE(hit.has_value());
  EXPECT_FALSE(hit->freed);
  EXPECT_EQ(hit->block.id, alloc_id{1});
  EXPECT_EQ(hit->offset, 250u);
  EXPECT_FALSE(m.erase_block(1200).has_value());
}

// Note [Block nodes are recycled]: with the history full, every block
// reuses the node evicted last; each block is still found while live, at
// its epoch from the history, and not once evicted.
TEST(AllocationMap, BlocksPastAFullHistoryAreFoundAtTheirEpochs) {
  allocation_map m(4);
  m.insert({alloc_id{1}, 1000, 1000, memory_kind::device, 0});
  std::vector<std::uint64_t> epochs;
  for (std::uint32_t i = 0; i < 12; ++i) {
    const std::uint64_t base = 1000 + (i % 3) * 100;
    m.insert_block({alloc_id{10 + i}, base, 64, memory_kind::cached_block, 0});
    epochs.push_back(m.epoch());
    EXPECT_EQ(m.find_live(base + 10)->id, alloc_id{10 + i});
    ASSERT_TRUE(m.erase_block(base).has_value());
  }
  EXPECT_EQ(m.live_block_count(), 0u);
  EXPECT_EQ(m.freed_count(), 4u);
  for (std::uint32_t i = 0; i < 12; ++i) {
    const std::uint64_t base = 1000 + (i % 3) * 100;
    const allocation* at = m.find_at(base + 10, epochs[i]);
    ASSERT_NE(at, nullptr);
    // The last four are in the history; older ones resolve to the segment.
    EXPECT_EQ(at->id, i >= 8 ? alloc_id{10 + i} : alloc_id{1}) << i;
  }
}

TEST(AllocationMap, EveryBlockCarvedFromTheSameBytesIsFoundAtItsEpoch) {
  allocation_map m;
  m.insert({alloc_id{1}, 1000, 1000, memory_kind::device, 0});
  const auto before = m.epoch();
  m.insert_block({alloc_id{2}, 1000, 512, memory_kind::cached_block, 0});
  const auto first = m.epoch();
  m.erase_block(1000);
  m.insert_block({alloc_id{3}, 1000, 256, memory_kind::cached_block, 0});
  const auto second = m.epoch();
  m.erase_block(1000);
  m.insert_block({alloc_id{4}, 1000, 512, memory_kind::cached_block, 0});
  EXPECT_EQ(m.find_at(1100, first)->id, alloc_id{2});
  EXPECT_EQ(m.find_at(1100, second)->id, alloc_id{3});
  EXPECT_EQ(m.find_at(1300, second)->id, alloc_id{1});  // past the 256-byte block
  EXPECT_EQ(m.find_at(1300, first)->id, alloc_id{2});
  EXPECT_EQ(m.find_at(1100, m.epoch())->id, alloc_id{4});
  EXPECT_EQ(m.find_at(1100, before)->id, alloc_id{1});  // before any block
}

// Note [Freed blocks in a ring]: a lookup walks back only over the blocks
// that died after its epoch, and finds the one among them that held the
// address then, however many others were freed since.
TEST(AllocationMap, AFreedBlockIsFoundAtItsEpochPastLaterFreesOnly) {
  allocation_map m(1024);
  m.insert({alloc_id{1}, 1000, 100000, memory_kind::device, 0});
  m.insert_block({alloc_id{2}, 1000, 100, memory_kind::cached_block, 0});
  const auto alive = m.epoch();
  m.erase_block(1000);
  const auto after = m.epoch();
  for (std::uint32_t i = 0; i < 500; ++i) {
    m.insert_block({alloc_id{10 + i}, 2000 + 100 * i, 100, memory_kind::cached_block, 0});
    m.erase_block(2000 + 100 * i);
  }
  EXPECT_EQ(m.find_at(1050, alive)->id, alloc_id{2});
  // Freed before that epoch: its bytes were the segment's again.
  EXPECT_EQ(m.find_at(1050, after)->id, alloc_id{1});
  EXPECT_EQ(m.find_at(2000 + 100 * 7 + 5, after)->id, alloc_id{1});
}

TEST(AllocationMap, ABlockThatLeftTheHistoryResolvesToItsSegment) {
  allocation_map m(2);
  m.insert({alloc_id{1}, 1000, 1000, memory_kind::device, 0});
  m.insert_block({alloc_id{2}, 1000, 100, memory_kind::cached_block, 0});
  const auto then = m.epoch();
  m.erase_block(1000);
  for (std::uint32_t i = 0; i < 2; ++i) {
    m.insert_block({alloc_id{10 + i}, 1500, 100, memory_kind::cached_block, 0});
    m.erase_block(1500);
  }
  EXPECT_EQ(m.find_at(1050, then)->id, alloc_id{1});
}

TEST(AllocationMap, ABlockOverALiveOneRetiresIt) {
  allocation_map m;
  m.insert({alloc_id{1}, 1000, 1000, memory_kind::device, 0});
  m.insert_block({alloc_id{2}, 1000, 512, memory_kind::cached_block, 0});
  EXPECT_EQ(m.insert_block({alloc_id{3}, 1256, 512, memory_kind::cached_block, 0}), 1u);
  EXPECT_EQ(m.find_live(1100)->id, alloc_id{1});
  EXPECT_EQ(m.find_live(1300)->id, alloc_id{3});
  EXPECT_EQ(m.live_block_count(), 1u);
}

TEST(AllocationMap, BlocksGoWithTheirSegment) {
  allocation_map m;
  m.insert({alloc_id{1}, 1000, 1000, memory_kind::device, 0});
  m.insert_block({alloc_id{2}, 1200, 100, memory_kind::cached_block, 0});
  const auto then = m.epoch();
  ASSERT_TRUE(m.erase(1000).has_value());
  EXPECT_EQ(m.live_block_count(), 0u);
  EXPECT_EQ(m.find_live(1250), nullptr);
  EXPECT_EQ(m.find_at(1250, then)->id, alloc_id{2});
  // The driver hands the range out again: no block of the old segment shows.
  m.insert({alloc_id{5}, 1000, 1000, memory_kind::device, 0});
  EXPECT_EQ(m.find_live(1250)->id, alloc_id{5});
  EXPECT_EQ(m.find_at(1250, m.epoch())->id, alloc_id{5});
}

TEST(AllocationMap, WithoutBlocksTheSegmentIsFoundAtEveryEpoch) {
  allocation_map m;
  m.insert({alloc_id{1}, 1000, 1000, memory_kind::device, 0});
  const auto then = m.epoch();
  m.insert({alloc_id{2}, 5000, 10, memory_kind::device, 0});
  EXPECT_EQ(m.find_at(1500, then)->id, alloc_id{1});
  EXPECT_EQ(m.find_live(1500)->id, alloc_id{1});
  EXPECT_EQ(m.live_block_count(), 0u);
}

// Note [Recent segment hits]: a remembered hit holds only while nothing changed.
TEST(AllocationMap, ARememberedHitGivesWayToWhatReplacedItsAllocation) {
  allocation_map m;
  m.insert({alloc_id{1}, 0x1000, 0x100, memory_kind::device, 0});
  ASSERT_EQ(m.find_live_segment(0x1040)->id, alloc_id{1});  // remembered
  ASSERT_TRUE(m.erase(0x1000));
  EXPECT_EQ(m.find_live_segment(0x1040), nullptr);
  m.insert({alloc_id{2}, 0x1000, 0x80, memory_kind::device, 0});
  EXPECT_EQ(m.find_live_segment(0x1040)->id, alloc_id{2});
  EXPECT_EQ(m.find_live_segment(0x1080), nullptr);  // past the new, shorter one
}

TEST(AllocationMap, AddressesSharingASlotEachFindTheirOwnAllocation) {
  allocation_map m;
  // 0x100010 and 0x153010 hash to the same slot of the table; different
  // allocations.
  m.insert({alloc_id{1}, 0x100000, 0x40, memory_kind::device, 0});
  m.insert({alloc_id{2}, 0x153000, 0x40, memory_kind::device, 0});
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(m.find_live_segment(0x100010)->id, alloc_id{1});
    EXPECT_EQ(m.find_live_segment(0x153010)->id, alloc_id{2});
    EXPECT_EQ(m.find_live_segment(0x100040), nullptr);
  }
}

TEST(AllocationMap, ARememberedSegmentStillYieldsToALiveBlockInIt) {
  allocation_map m;
  m.insert({alloc_id{1}, 0x10000, 0x1000, memory_kind::device, 0});
  ASSERT_EQ(m.find_live(0x10100)->id, alloc_id{1});
  m.insert_block({alloc_id{2}, 0x10100, 0x100, memory_kind::device, 0});
  EXPECT_EQ(m.find_live(0x10100)->id, alloc_id{2});
  EXPECT_EQ(m.find_live_segment(0x10100)->id, alloc_id{1});
  EXPECT_EQ(m.find(0x10180)->block.id, alloc_id{2});
}

TEST(AllocationMap, AMovedMapFindsWhatItHoldsAndTheOldOneNothing) {
  allocation_map m;
  m.insert({alloc_id{1}, 0x1000, 0x100, memory_kind::device, 0});
  ASSERT_EQ(m.find_live_segment(0x1010)->id, alloc_id{1});  // remembered
  allocation_map moved = std::move(m);
  ASSERT_NE(moved.find_live_segment(0x1010), nullptr);
  EXPECT_EQ(moved.find_live_segment(0x1010)->id, alloc_id{1});
  EXPECT_EQ(m.find_live_segment(0x1010), nullptr);  // the moved-from map keeps no hit
}

// Note [A word's lookup copies three words]: a segment remembered by a
// lookup does not answer for an address a block inside it holds.
TEST(AllocationMap, AnExtentInsideABlockIsTheBlocksThoughItsSegmentIsRemembered) {
  allocation_map m;
  m.insert({alloc_id{1}, 0x1000, 0x1000, memory_kind::device, 0});
  m.insert_block({alloc_id{2}, 0x1400, 0x100, memory_kind::cached_block, 0});
  ASSERT_EQ(m.find_live_segment(0x1410)->id, alloc_id{1});  // remembered
  const auto extent = m.find_extent(0x1410);
  ASSERT_TRUE(extent.has_value());
  EXPECT_EQ(extent->id, alloc_id{2});
  EXPECT_EQ(extent->offset, 0x10u);
  EXPECT_EQ(extent->rest, 0xf0u);
}

// A remembered segment freed and its address handed out again: the extent
// is the new allocation's, and between the two the freed one's.
TEST(AllocationMap, AnExtentFollowsAFreeAndAReallocationAtTheSameAddress) {
  allocation_map m;
  m.insert({alloc_id{1}, 0x1000, 0x1000, memory_kind::device, 0});
  ASSERT_EQ(m.find_extent(0x1800)->id, alloc_id{1});  // remembered
  ASSERT_TRUE(m.erase(0x1000).has_value());
  EXPECT_EQ(m.find_extent(0x1800)->id, alloc_id{1});  // freed: use after free
  m.insert({alloc_id{2}, 0x1000, 0x900, memory_kind::device, 0});
  EXPECT_EQ(m.find_extent(0x1800)->id, alloc_id{2});
  EXPECT_EQ(m.find_extent(0x1800)->rest, 0x100u);
}

// Note [Recent segment hits]: under random inserts, frees and blocks, every
// lookup agrees with a scan of the live allocations the map lists.
TEST(AllocationMap, RememberedHitsAgreeWithTheLiveAllocationsUnderChurn) {
  allocation_map m(8);
  std::mt19937_64 random(7);
  const auto pick = [&](std::uint64_t n) { return random() % n; };
  std::uint64_t next_id = 1;
  std::vector<std::uint64_t> recent;  // addresses looked up, asked again often
  for (int step = 0; step < 20000; ++step) {
    const std::uint64_t base = 0x100000 + pick(64) * 0x400;
    switch (pick(8)) {
      case 0:
        m.insert({alloc_id{static_cast<std::uint32_t>(next_id++)}, base, 0x100 + pick(4) * 0x200,
                  memory_kind::device, 0});
        break;
      case 1: m.erase(base); break;
      case 2:
        if (const allocation* seg = m.find_live_segment(base); seg && seg->size >= 0x80) {
          m.insert_block({alloc_id{static_cast<std::uint32_t>(next_id++)}, seg->base + 0x40, 0x40,
                          memory_kind::device, 0});
        }
        break;
      default: {
        const std::uint64_t address =
            !recent.empty() && pick(2) == 0 ? recent[pick(recent.size())] : base + pick(0x400);
        recent.push_back(address);
        if (recent.size() > 16) recent.erase(recent.begin());
        const allocation* expected = nullptr;
        m.for_each_live_overlapping(address, address + 1, [&](const allocation& a) {
          if (address == a.base || address - a.base < a.size) expected = &a;
        });
        ASSERT_EQ(m.find_live_segment(address), expected) << "step " << step;
        // Note [A word's lookup copies three words]: the same entry as find().
        const auto hit = m.find(address);
        const auto extent = m.find_extent(address);
        ASSERT_EQ(hit.has_value(), extent.has_value()) << "step " << step;
        if (hit) {
          ASSERT_EQ(extent->id, hit->block.id) << "step " << step;
          ASSERT_EQ(extent->offset, hit->offset) << "step " << step;
          ASSERT_EQ(extent->rest, hit->block.size > hit->offset ? hit->block.size - hit->offset : 0)
              << "step " << step;
        }
      }
    }
  }
}

}  // namespace
}  // namespace streamsan::injection
