#include "inject/model/flat_id_map.h"

#include <gtest/gtest.h>

#include "sanitizer/log/ids.h"

namespace streamsan::injection {
namespace {

TEST(FlatIdMap, EntersFindsAndErases) {
  flat_id_map<alloc_id, int> t;
  EXPECT_EQ(t.find(alloc_id{1}), nullptr);
  EXPECT_FALSE(t.erase(alloc_id{1}));
  t.set(alloc_id{1}, 10);
  t.set(alloc_id{2}, 20);
  t.set(alloc_id{1}, 11);  // replaces
  EXPECT_EQ(t.size(), 2u);
  ASSERT_NE(t.find(alloc_id{1}), nullptr);
  EXPECT_EQ(*t.find(alloc_id{1}), 11);
  EXPECT_TRUE(t.erase(alloc_id{1}));
  EXPECT_EQ(t.find(alloc_id{1}), nullptr);
  EXPECT_FALSE(t.erase(alloc_id{1}));
  EXPECT_EQ(*t.find(alloc_id{2}), 20);
  EXPECT_EQ(t.size(), 1u);
}

// Note [Flat tables by id]: erasing from the middle of probe runs keeps
// every other entry findable (backward shift, no tombstones), through
// growth and long churn.
TEST(FlatIdMap, EveryLiveIdIsFoundThroughChurn) {
  flat_id_map<alloc_id, std::uint32_t> t;
  std::vector<std::uint32_t> live;
  std::uint32_t next = 1;
  for (int round = 0; round < 2000; ++round) {
    for (int i = 0; i < 3; ++i) {
      t.set(alloc_id{next}, next * 7);
      live.push_back(next++);
    }
    // Leave a scattered one and the oldest, so runs break in the middle.
    for (std::size_t victim : {live.size() / 2, std::size_t{0}}) {
      if (live.size() < 40) break;
      ASSERT_TRUE(t.erase(alloc_id{live[victim]}));
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
    }
  }
  ASSERT_EQ(t.size(), live.size());
  for (std::uint32_t id : live) {
    ASSERT_NE(t.find(alloc_id{id}), nullptr) << id;
    EXPECT_EQ(*t.find(alloc_id{id}), id * 7);
  }
  EXPECT_EQ(t.find(alloc_id{next}), nullptr);
}

// A caching allocator's steady state (a block in, a block out): the table
// stops growing, so it allocates nothing once the loop runs.
TEST(FlatIdMap, SteadyChurnDoesNotGrow) {
  flat_id_map<alloc_id, int> t;
  std::size_t capacity = 0;
  for (std::uint32_t id = 1; id < 100000; ++id) {
    t.set(alloc_id{id}, 0);
    if (id > 8) {
      ASSERT_TRUE(t.erase(alloc_id{id - 8}));
    }
    if (id == 100) capacity = t.capacity();  // 9 at once at most
  }
  EXPECT_EQ(t.capacity(), capacity);
  EXPECT_EQ(t.size(), 8u);
}

}  // namespace
}  // namespace streamsan::injection
