#include <gtest/gtest.h>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace graph_test {  // Note [Unity test programs in the sanitizer passes]
namespace {

using testing::expect_error;

constexpr std::uint64_t n = 16;
constexpr std::uint64_t bytes = n * sizeof(float);

class Graph : public testing::runtime_test {};

TEST_F(Graph, CapturedWorkRunsOnlyWhenLaunched) {
  stream s;
  auto x = allocate_device(bytes);
  auto y = allocate_device(bytes);
  launch(s, kernels::fill{x, 1.0f});
  launch(s, kernels::fill{y, 0.0f});
  s.synchronize();
  graph g;
  g.capture_begin(s);
  EXPECT_TRUE(s.is_capturing());
  launch(s, kernels::axpy{2.0f, x, y});  // y += 2
  g.capture_end();
  EXPECT_FALSE(s.is_capturing());
  EXPECT_TRUE(g.captured());
  EXPECT_EQ(g.node_count(), 1u);
  EXPECT_EQ(testing::read_back(y), std::vector<float>(n, 0.0f));  // captured, not run
  for (int i = 0; i < 3; ++i) g.launch(s);
  s.synchronize();
  EXPECT_EQ(testing::read_back(y), std::vector<float>(n, 6.0f));
}

TEST_F(Graph, ScopedCaptureMakesTheStreamCurrent) {
  stream s;
  graph g;
  EXPECT_FALSE(is_current_stream_capturing());
  {
    graph_capture capture(g, s);
    EXPECT_TRUE(is_current_stream_capturing());
    EXPECT_EQ(current_stream(), s.ref());
  }
  EXPECT_FALSE(is_current_stream_capturing());
  EXPECT_EQ(current_stream(), default_stream());
  EXPECT_TRUE(g.captured());
  g.replay();  // on the current stream
  synchronize();
}

TEST_F(Graph, ForkAndJoinKeepTheirEdges) {
  testing::kept_log log;
  stream s1;
  stream s2;
  auto a = allocate_device(bytes);
  auto b = allocate_device(bytes);
  auto c = allocate_device(bytes);
  graph g;
  g.capture_begin(s1);
  launch(s1, kernels::fill{a, 1.0f});      // node 0
  event fork;
  fork.record(s1);
  s2.wait_event(fork);                      // s2 joins the capture
  launch(s2, kernels::fill{b, 2.0f});      // node 1, after 0
  launch(s1, kernels::fill{c, 3.0f});      // node 2, after 0
  event join;
  join.record(s2);
  s1.wait_event(join);
  launch(s1, kernels::axpy{1.0f, b, c});   // node 3, after 2 and 1
  g.capture_end();
  EXPECT_EQ(g.node_count(), 4u);
  EXPECT_EQ(g.edge_count(), 4u);
  const auto graphs = log.all<graph_instantiate>();
  ASSERT_EQ(graphs.size(), 1u);
  EXPECT_EQ(graphs[0].graph, g.id());
  ASSERT_EQ(graphs[0].nodes.size(), 4u);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (const auto& e : graphs[0].edges) edges.emplace_back(e.from, e.to);
  std::sort(edges.begin(), edges.end());
  const std::vector<std::pair<std::uint32_t, std::uint32_t>> expected{{0, 1}, {0, 2}, {1, 3}, {2, 3}};
  EXPECT_EQ(edges, expected);
  EXPECT_EQ(graphs[0].nodes[3].kind, graph_node_kind::kernel);
  EXPECT_EQ(log.text(graphs[0].nodes[3].name), "axpy");
  ASSERT_EQ(graphs[0].nodes[3].accesses.size(), 2u);
  EXPECT_EQ(graphs[0].nodes[3].accesses[1].range.alloc, c.alloc());
  // Nothing captured was logged as executed.
  EXPECT_EQ(log.count<kernel_launch>(), 0u);
  EXPECT_EQ(log.count<event_record>(), 0u);
  EXPECT_EQ(log.count<event_wait>(), 0u);
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    g.launch(s1);
    s1.synchronize();
    EXPECT_EQ(testing::read_back(c), std::vector<float>(n, 5.0f));
  }
  const auto launches = log.all<graph_launch>();
  ASSERT_EQ(launches.size(), 8u);
  EXPECT_EQ(launches[0].stream, s1.id());
}

TEST_F(Graph, CaptureBoundariesReachTheLog) {
  testing::kept_log log;
  stream s;
  auto a = allocate_device(bytes);
  graph g;
  g.capture_begin(s);
  memset_async(a, 0, s);
  g.capture_end();
  const auto begins = log.all<graph_capture_begin>();
  const auto ends = log.all<graph_capture_end>();
  ASSERT_EQ(begins.size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(begins[0].stream, s.id());
  EXPECT_EQ(begins[0].graph, g.id());
  EXPECT_EQ(ends[0].graph, g.id());
  EXPECT_EQ(log.count<memset_record>(), 0u);
  const auto graphs = log.all<graph_instantiate>();
  ASSERT_EQ(graphs.size(), 1u);
  ASSERT_EQ(graphs[0].nodes.size(), 1u);
  EXPECT_EQ(graphs[0].nodes[0].kind, graph_node_kind::memset);
}

TEST_F(Graph, SynchronizingACapturingStreamThrowsAndInvalidates) {
  stream s;
  graph g;
  g.capture_begin(s);
  expect_error<usage_error>([&] { s.synchronize(); },
                            s.name() + ".synchronize(): " + s.name() + " is capturing " +
                                to_string(g.id()) +
                                "; synchronizing with a capturing stream is not allowed "
                                "(S-GRAPH-1); the capture is invalidated");
  try {
    g.capture_end();
    ADD_FAILURE() << "the capture was not invalidated";
  } catch (const cuda_error& e) {
    EXPECT_EQ(e.code(), error_code::capture_invalidated);
  }
  EXPECT_FALSE(g.captured());
  EXPECT_FALSE(s.is_capturing());
}

TEST_F(Graph, SynchronizingTheDeviceDuringCaptureThrows) {
  stream s;
  graph g;
  g.capture_begin(s);
  EXPECT_THROW(synchronize(), usage_error);
  EXPECT_THROW(s.query(), usage_error);
  EXPECT_THROW(g.capture_end(), cuda_error);
}

TEST_F(Graph, AStreamThatNeverRejoinsMakesTheCaptureFail) {
  stream s1;
  stream s2;
  graph g;
  g.capture_begin(s1);
  event fork;
  fork.record(s1);
  s2.wait_event(fork);
  launch(s2, kernels::spin{});
  try {
    g.capture_end();
    ADD_FAILURE() << "the unjoined capture ended";
  } catch (const cuda_error& e) {
    EXPECT_EQ(e.code(), error_code::capture_unjoined);
    EXPECT_EQ(std::string(e.what()),
              "ending the capture of " + to_string(g.id()) + ": " + s2.name() +
                  " joined the capture but was not joined back into " + s1.name() +
                  " (capture unjoined)");
  }
  EXPECT_FALSE(s2.is_capturing());
}

TEST_F(Graph, WaitStreamJoinsACapture) {
  stream s1;
  stream s2;
  auto a = allocate_device(bytes);
  graph g;
  g.capture_begin(s1);
  launch(s1, kernels::fill{a, 1.0f});
  s2.wait_stream(s1);
  EXPECT_TRUE(s2.is_capturing());
  launch(s2, kernels::scale{a, 4.0f});
  s1.wait_stream(s2);
  g.capture_end();
  EXPECT_EQ(g.node_count(), 2u);
  EXPECT_EQ(g.edge_count(), 1u);
  g.launch(s1);
  s1.synchronize();
  EXPECT_EQ(testing::read_back(a), std::vector<float>(n, 4.0f));
}

TEST_F(Graph, LegacyStreamWorkDuringCaptureOfABlockingStreamThrows) {
  stream blocking({.non_blocking = false});
  graph g;
  g.capture_begin(blocking);
  EXPECT_THROW(launch(legacy_default_stream(), kernels::spin{}), usage_error);
  EXPECT_THROW(g.capture_end(), cuda_error);
}

TEST_F(Graph, TheLegacyStreamCannotCapture) {
  graph g;
  expect_error<usage_error>([&] { g.capture_begin(legacy_default_stream()); },
                            "capturing " + to_string(g.id()) + " on " +
                                legacy_default_stream().name() +
                                ": the legacy default stream cannot capture");
}

TEST_F(Graph, ResetAllowsAnotherCapture) {
  stream s;
  graph g;
  g.capture_begin(s);
  launch(s, kernels::spin{});
  g.capture_end();
  g.reset();
  EXPECT_FALSE(g.captured());
  g.capture_begin(s);
  launch(s, kernels::spin{});
  launch(s, kernels::spin{});
  g.capture_end();
  EXPECT_EQ(g.node_count(), 2u);
  EXPECT_EQ(g.edge_count(), 1u);
}

}  // namespace
}  // namespace graph_test
}  // namespace streamsan::rt
