#include "sanitizer/engine/operation_window.h"

#include <gtest/gtest.h>

namespace streamsan {
namespace {

timeline_op op(std::uint64_t seq) {
  timeline_op o;
  o.seq = seq;
  return o;
}

TEST(OperationWindow, JoinsDrawOneEdgePerNewSourceOperation) {
  operation_window w(16, 16);
  const auto host = w.add(0, op(1));
  const auto a = w.add(1, op(2));
  w.join(0, a, timeline_edge_kind::issue);
  const auto b = w.add(1, op(3));
  w.join(0, b, timeline_edge_kind::issue);  // nothing new on lane 0
  const auto t = w.cut(b, 1, 0, op(1));
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->edges.size(), 1u);
  EXPECT_EQ(t->edges[0].from, 0u);
  EXPECT_EQ(t->edges[0].to, 1u);
  (void)host;
}

TEST(OperationWindow, EdgesToOverwrittenOperationsAreDropped) {
  operation_window w(4, 4);
  const auto first = w.add(0, op(1));
  const auto second = w.add(1, op(2));
  w.edge(first, second, timeline_edge_kind::event);
  std::uint64_t last = 0;
  for (std::uint64_t s = 3; s < 10; ++s) last = w.add(1, op(s));
  const auto t = w.cut(last, 1, 0, op(1));
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->edges.empty());
  EXPECT_TRUE(t->previous_outside_window);
  EXPECT_EQ(t->ops.size(), 5u);
}

TEST(OperationWindow, MemoryDoesNotGrowWithTheLog) {
  operation_window w(32, 8);
  for (std::uint64_t s = 1; s < 100; ++s) {
    const auto id = w.add(s % 3, op(s));
    w.join((s + 1) % 3, id, timeline_edge_kind::issue);
  }
  const auto bytes = w.bytes_held();
  for (std::uint64_t s = 100; s < 100000; ++s) {
    const auto id = w.add(s % 3, op(s));
    w.join((s + 1) % 3, id, timeline_edge_kind::issue);
  }
  EXPECT_EQ(w.bytes_held(), bytes);
}

TEST(OperationWindow, ACurrentThatLeftTheWindowCutsNothing) {
  operation_window w(2, 2);
  const auto first = w.add(0, op(1));
  w.add(0, op(2));
  w.add(0, op(3));
  EXPECT_EQ(w.cut(first, 0, 0, op(0)), nullptr);
}

}  // namespace
}  // namespace streamsan
