// The engine's paged id table (sanitizer/engine/id_table.h).
#include "sanitizer/engine/id_table.h"

#include <gtest/gtest.h>

#include <vector>

namespace streamsan {
namespace {

// Like the engine's allocation: a default member that points at the object
// itself, and memory of its own.
struct item {
  const item* self = this;
  std::vector<int> held;
  int value = 0;
};

// Note [Recycled objects]
TEST(EngineIdTable, AnErasedObjectsStorageServesTheNextInsertAsAFreshObject) {
  id_table<alloc_id, item> table;
  item& first = table.get_or_insert(alloc_id{1});
  first.held.assign(100, 7);
  first.value = 42;
  const item* storage = &first;
  table.erase(alloc_id{1});
  EXPECT_EQ(table.find(alloc_id{1}), nullptr);
  EXPECT_EQ(table.size(), 0u);

  item& second = table.get_or_insert(alloc_id{2});
  EXPECT_EQ(&second, storage);          // no new allocation
  EXPECT_EQ(second.self, &second);      // made again in place, not assigned
  EXPECT_TRUE(second.held.empty());     // what the first held is gone
  EXPECT_EQ(second.held.capacity(), 0u);
  EXPECT_EQ(second.value, 0);
  EXPECT_EQ(table.find(alloc_id{2}), &second);
  EXPECT_EQ(table.size(), 1u);
}

TEST(EngineIdTable, ManyErasedObjectsAreFreedBeyondTheFewKept) {
  id_table<alloc_id, item> table;
  for (std::uint32_t i = 1; i <= 1000; ++i) table.get_or_insert(alloc_id{i}).value = 1;
  for (std::uint32_t i = 1; i <= 1000; ++i) table.erase(alloc_id{i});
  EXPECT_EQ(table.size(), 0u);
  for (std::uint32_t i = 1001; i <= 2000; ++i) {
    item& it = table.get_or_insert(alloc_id{i});
    EXPECT_EQ(it.value, 0);
    EXPECT_EQ(it.self, &it);
  }
  EXPECT_EQ(table.size(), 1000u);
}

}  // namespace
}  // namespace streamsan
