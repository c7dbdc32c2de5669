// Graph memory nodes (Note [Graph allocations]): inside the graph at
// instantiation, and each launch's allocation and free against the work
// outside the graph.
#include <gtest/gtest.h>

#include "tests/engine/engine_driver.h"

namespace streamsan {
namespace {

using testing::engine_driver;
using testing::kind_list;
constexpr auto use_before_alloc = diagnostic_kind::use_before_alloc;
constexpr auto use_after_free = diagnostic_kind::use_after_free;
constexpr auto free_while_in_use = diagnostic_kind::free_while_in_use;
constexpr auto nb = stream_flavor::non_blocking;

// alloc(x) -> fill(x) -> read(x) [-> free(x)]: nodes 0, 1, 2 [, 3].
graph_id fill_graph(engine_driver& d, alloc_id x, bool frees) {
  const auto g = d.graph();
  std::vector<testing::node_spec> nodes{engine_driver::alloc_node(x),
                                        {"fill", {d.write(x)}},
                                        {"read", {d.read(x)}}};
  std::vector<graph_edge> edges{{0, 1}, {1, 2}};
  if (frees) {
    nodes.push_back(engine_driver::free_node(x));
    edges.push_back({2, 3});
  }
  d.instantiate(g, nodes, edges);
  return g;
}

// Launches `g` on s1, then s2 waits for the launch and reads x.
void launch_then_read(engine_driver& d, graph_id g, alloc_id x, stream_id s1, stream_id s2) {
  d.launch_graph(g, s1);
  const auto e = d.event();
  d.record(e, s1);
  d.wait(e, s2);
  d.launch(s2, {d.read(x)}, "reader");
}

TEST(EngineGraphMemory, AccessesBetweenTheAllocAndFreeNodesAreCleanAtEveryLaunch) {
  engine_driver d;
  const auto s = d.stream();
  const auto x = d.graph_alloc(1024);
  const auto g = fill_graph(d, x, /*frees=*/true);
  d.launch_graph(g, s);
  d.launch_graph(g, s);
  d.launch_graph(g, d.stream());  // each launch allocates anew
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_EQ(d.eng().statistics().accesses_unknown_alloc, 0u);
}

TEST(EngineGraphMemory, ANodeNotAfterTheAllocNodeIsUseBeforeAlloc) {
  engine_driver d;
  const auto x = d.graph_alloc(1024);
  const auto g = d.graph();
  d.instantiate(g, {engine_driver::alloc_node(x), {"early", {d.write(x)}}}, {});
  ASSERT_EQ(d.kinds(), (kind_list{use_before_alloc}));
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(r.current.op, operation_kind::graph_node);
  EXPECT_EQ(r.current.graph, g);
  EXPECT_EQ(r.current.graph_node, 1u);
  EXPECT_EQ(r.previous->graph_node, 0u);
  ASSERT_TRUE(r.allocation);
  EXPECT_EQ(r.allocation->id, x);
}

TEST(EngineGraphMemory, ANodeAfterTheFreeNodeIsUseAfterFree) {
  engine_driver d;
  const auto x = d.graph_alloc(64);
  const auto g = d.graph();
  d.instantiate(g,
                {engine_driver::alloc_node(x), engine_driver::free_node(x), {"late", {d.read(x)}}},
                {{0, 1}, {1, 2}});
  ASSERT_EQ(d.kinds(), (kind_list{use_after_free}));
  EXPECT_EQ(d.diagnostics()[0].current.graph_node, 2u);
  EXPECT_EQ(d.diagnostics()[0].previous->graph_node, 1u);
}

TEST(EngineGraphMemory, ANodeUnorderedWithTheFreeNodeIsFreeWhileInUse) {
  engine_driver d;
  const auto x = d.graph_alloc(64);
  const auto g = d.graph();
  d.instantiate(g,
                {engine_driver::alloc_node(x), engine_driver::free_node(x), {"user", {d.read(x)}}},
                {{0, 1}, {0, 2}});
  ASSERT_EQ(d.kinds(), (kind_list{free_while_in_use}));
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(r.current.graph_node, 1u);   // the free
  EXPECT_EQ(r.previous->graph_node, 2u);  // the user
  EXPECT_EQ(r.hazard_kind, hazard::write_after_read);
}

TEST(EngineGraphMemory, AUseBeforeTheFirstLaunchIsUseBeforeAllocOfTheAllocNode) {
  engine_driver d;
  const auto s = d.stream();
  const auto x = d.graph_alloc(1024);
  const auto g = fill_graph(d, x, /*frees=*/false);
  d.launch(s, {d.read(x)}, "too_early");
  ASSERT_EQ(d.kinds(), (kind_list{use_before_alloc}));
  EXPECT_EQ(d.diagnostics()[0].previous->op, operation_kind::graph_node);
  EXPECT_EQ(d.diagnostics()[0].previous->graph, g);
  EXPECT_EQ(d.diagnostics()[0].previous->graph_node, 0u);
}

TEST(EngineGraphMemory, OutsideWorkAfterTheLaunchOfAGraphThatFreesIsUseAfterFree) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.graph_alloc(1024);
  const auto g = fill_graph(d, x, /*frees=*/true);
  launch_then_read(d, g, x, s1, s2);
  ASSERT_EQ(d.kinds(), (kind_list{use_after_free}));
  EXPECT_EQ(d.diagnostics()[0].previous->op, operation_kind::graph_node);
  EXPECT_EQ(d.diagnostics()[0].previous->graph_node, 3u);
  EXPECT_EQ(d.diagnostics()[0].previous->stream, s1);
}

TEST(EngineGraphMemory, MemoryTheGraphKeepsIsLiveForWorkOrderedAfterTheLaunch) {
  engine_driver d;
  const auto s1 = d.stream(nb), s2 = d.stream(nb);
  const auto x = d.graph_alloc(1024);
  const auto g = fill_graph(d, x, /*frees=*/false);
  launch_then_read(d, g, x, s1, s2);
  d.free(x, free_mode::stream_ordered, s2);
  d.launch_graph(g, s1);  // allocates it again
  d.launch(s1, {d.read(x)}, "after_relaunch");
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineGraphMemory, OutsideWorkNotOrderedAfterTheLaunchIsUseBeforeAlloc) {
  engine_driver d;
  const auto s1 = d.stream(nb), s2 = d.stream(nb);
  const auto x = d.graph_alloc(1024);
  const auto g = fill_graph(d, x, /*frees=*/false);
  d.launch_graph(g, s1);
  d.launch(s2, {d.read(x)}, "reader");
  // The read is not ordered after the launch, which also fills x: both.
  const auto kinds = d.kinds();
  ASSERT_FALSE(kinds.empty());
  EXPECT_EQ(kinds[0], use_before_alloc);
  EXPECT_EQ(d.diagnostics()[0].current.stream, s2);
  EXPECT_EQ(d.diagnostics()[0].previous->stream, s1);
}

TEST(EngineGraphMemory, AFreeNodeOfAnotherGraphFreesOnItsLaunchStream) {
  engine_driver d;
  const auto s1 = d.stream(nb), s2 = d.stream(nb);
  const auto x = d.graph_alloc(1024);
  const auto maker = fill_graph(d, x, /*frees=*/false);
  const auto freer = d.graph();
  d.instantiate(freer, {engine_driver::free_node(x)}, {});
  launch_then_read(d, maker, x, s1, s2);
  d.launch_graph(freer, s1);  // not ordered after the reader on s2
  ASSERT_EQ(d.kinds(), (kind_list{free_while_in_use}));
  EXPECT_EQ(d.diagnostics()[0].current.graph, freer);
  EXPECT_EQ(d.diagnostics()[0].previous->stream, s2);
  d.launch(s1, {d.read(x)}, "after_free");
  EXPECT_EQ(d.kinds(), (kind_list{free_while_in_use, use_after_free}));
}

TEST(EngineGraphMemory, ARelaunchFreesWhatTheLastLaunchLeftLive) {
  engine_driver d;
  const auto s1 = d.stream(nb), s2 = d.stream(nb);
  const auto x = d.graph_alloc(1024);
  const auto g = fill_graph(d, x, /*frees=*/false);
  launch_then_read(d, g, x, s1, s2);
  d.launch_graph(g, s1);  // instantiated to free on launch: frees x, s2 still reads it
  ASSERT_EQ(d.kinds(), (kind_list{free_while_in_use}));
  EXPECT_EQ(d.diagnostics()[0].previous->stream, s2);
}

TEST(EngineGraphMemory, AFreeNodeOfMemoryNeverAllocatedIsReported) {
  engine_driver d;
  const auto s = d.stream();
  const auto x = d.graph_alloc(1024);
  fill_graph(d, x, /*frees=*/false);  // never launched
  const auto freer = d.graph();
  d.instantiate(freer, {engine_driver::free_node(x)}, {});
  d.launch_graph(freer, s);
  EXPECT_EQ(d.kinds(), (kind_list{use_before_alloc}));
}

TEST(EngineGraphMemory, GraphAllocationsAreNotForgottenWhileDead) {
  engine_options options;
  options.remembered_dead_objects = 2;
  engine_driver d(false, options);
  const auto s = d.stream();
  const auto x = d.graph_alloc(1024);
  const auto g = fill_graph(d, x, /*frees=*/true);
  d.launch_graph(g, s);
  for (int i = 0; i < 8; ++i) d.free(d.alloc(16));  // pushes older dead ids out
  d.launch_graph(g, s);
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_EQ(d.eng().statistics().accesses_unknown_alloc, 0u);
}

}  // namespace
}  // namespace streamsan

namespace streamsan {
namespace {

// A freed graph allocation names no epoch until the next launch allocates
// it again, so the slots of streams that launched it and ended are reused.
TEST(EngineGraphMemory, FreedGraphMemoryDoesNotKeepEndedStreamsSlots) {
  testing::engine_driver d;
  for (int i = 0; i < 1000; ++i) {  // each graph launched once, on a stream that ends
    const auto g = fill_graph(d, d.graph_alloc(64), /*frees=*/true);
    const auto s = d.stream(stream_flavor::non_blocking);
    d.launch_graph(g, s);
    d.sync(s);
    d.destroy(s);
  }
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_LE(d.eng().statistics().context_slots, 128u);
}

}  // namespace
}  // namespace streamsan
