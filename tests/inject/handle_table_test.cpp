#include "inject/model/handle_table.h"

#include <gtest/gtest.h>

#include "sanitizer/log/ids.h"

namespace streamsan::injection {
namespace {

TEST(HandleTable, DestroyedHandleKeepsItsIdUntilRecycled) {
  handle_table<stream_id> t;
  t.create(0x10, stream_id{1});
  EXPECT_EQ(t.destroy(0x10), stream_id{1});
  EXPECT_EQ(t.destroy(0x10), std::nullopt);  // already destroyed
  ASSERT_NE(t.find(0x10), nullptr);
  EXPECT_TRUE(t.find(0x10)->destroyed);
  EXPECT_EQ(t.find(0x10)->id, stream_id{1});
  t.create(0x10, stream_id{2});
  EXPECT_FALSE(t.find(0x10)->destroyed);
  EXPECT_EQ(t.find(0x10)->id, stream_id{2});
}

// Note [Handles are translated at the boundary]: churn through distinct
// handles keeps the live ones and the last `capacity` tombstones only.
TEST(HandleTable, TombstonesAreForgottenOldestFirst) {
  handle_table<stream_id> t(4);
  for (std::uint32_t i = 1; i <= 100; ++i) {
    t.create(i * 16, stream_id{i});
    t.destroy(i * 16);
  }
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(t.find(96 * 16), nullptr);
  ASSERT_NE(t.find(97 * 16), nullptr);
  EXPECT_EQ(t.find(97 * 16)->id, stream_id{97});
}

TEST(HandleTable, ARecycledHandleOutlivesItsOldTombstone) {
  handle_table<stream_id> t(2);
  t.create(0x10, stream_id{1});
  t.destroy(0x10);
  t.create(0x10, stream_id{2});  // handed out again: live
  t.create(0x20, stream_id{3});
  t.destroy(0x20);
  t.create(0x30, stream_id{4});
  t.destroy(0x30);  // pushes out 0x10's old tombstone, not the live 0x10
  ASSERT_NE(t.find(0x10), nullptr);
  EXPECT_EQ(t.find(0x10)->id, stream_id{2});
  EXPECT_FALSE(t.find(0x10)->destroyed);
  EXPECT_NE(t.find(0x20), nullptr);
  EXPECT_NE(t.find(0x30), nullptr);
}

TEST(HandleTable, LiveHandlesAreNeverForgotten) {
  handle_table<stream_id> t(2);
  for (std::uint32_t i = 1; i <= 10; ++i) t.create(i, stream_id{i});
  for (std::uint32_t i = 11; i <= 20; ++i) {
    t.create(i, stream_id{i});
    t.destroy(i);
  }
  for (std::uint32_t i = 1; i <= 10; ++i) ASSERT_NE(t.find(i), nullptr) << i;
  EXPECT_EQ(t.size(), 12u);
}

// Note [Recent handles]: a handle found (and so remembered) whose tombstone
// is pushed out is unknown again, and its next create is what is found.
TEST(HandleTable, AHandleRememberedIsForgottenWithItsTombstone) {
  handle_table<stream_id> t(1);
  t.create(0x10, stream_id{1});
  ASSERT_NE(t.find(0x10), nullptr);
  t.destroy(0x10);
  EXPECT_TRUE(t.find(0x10)->destroyed);
  t.create(0x20, stream_id{2});
  t.destroy(0x20);  // pushes out 0x10's tombstone
  EXPECT_EQ(t.find(0x10), nullptr);
  t.create(0x10, stream_id{3});
  ASSERT_NE(t.find(0x10), nullptr);
  EXPECT_EQ(t.find(0x10)->id, stream_id{3});
}

// A copy remembers nothing of the table it was copied from: its entries are
// its own.
TEST(HandleTable, ACopyFindsItsOwnEntries) {
  handle_table<stream_id> t;
  t.create(0x10, stream_id{1});
  ASSERT_NE(t.find(0x10), nullptr);
  handle_table<stream_id> copy = t;
  copy.create(0x10, stream_id{2});
  EXPECT_EQ(copy.find(0x10)->id, stream_id{2});
  EXPECT_EQ(t.find(0x10)->id, stream_id{1});
}

}  // namespace
}  // namespace streamsan::injection
