// Stream capture and CUDA graphs (S-GRAPH-1, S-GRAPH-2).
#include <gtest/gtest.h>

#include "tests/engine/engine_driver.h"

namespace streamsan {
namespace {

using testing::engine_driver;
using testing::kind_list;
constexpr auto graph_node_race = diagnostic_kind::graph_node_race;
constexpr auto sync_during_capture = diagnostic_kind::sync_during_capture;

TEST(EngineGraphs, TwoUnorderedNodesTouchingOneBufferRace) {
  engine_driver d;
  const auto x = d.alloc(1024);
  const auto g = d.graph();
  d.instantiate(g, {{"producer", {d.write(x, 0, 512)}}, {"consumer", {d.read(x, 256, 512)}}}, {});
  ASSERT_EQ(d.kinds(), (kind_list{graph_node_race}));
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(r.hazard_kind, hazard::read_after_write);
  EXPECT_EQ(r.current.op, operation_kind::graph_node);
  EXPECT_EQ(r.current.graph, g);
  EXPECT_EQ(r.current.graph_node, 1u);
  EXPECT_EQ(r.previous->graph_node, 0u);
  EXPECT_EQ(d.eng().tables().string(r.previous->name), "producer");
  EXPECT_EQ(r.overlap_offset, 256u);
  EXPECT_EQ(r.overlap_size, 256u);
}

TEST(EngineGraphs, AnEdgeOrdersTheNodes) {
  engine_driver d;
  const auto x = d.alloc(1024);
  const auto g = d.graph();
  d.instantiate(g, {{"producer", {d.write(x)}}, {"consumer", {d.read(x)}}}, {{0, 1}});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineGraphs, APathThroughOtherNodesOrdersThem) {
  engine_driver d;
  const auto x = d.alloc(1024), y = d.alloc(8);
  const auto g = d.graph();
  d.instantiate(g,
                {{"a", {d.write(x)}}, {"b", {d.write(y)}}, {"c", {d.read(y)}}, {"d", {d.read(x)}}},
                {{0, 1}, {1, 2}, {2, 3}});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineGraphs, EachUnorderedPairIsReportedOnce) {
  engine_driver d;
  const auto x = d.alloc(1024);
  const auto g = d.graph();
  // Three writers of x, two of them ordered: pairs (0,2) and (1,2) race.
  d.instantiate(g, {{"w0", {d.write(x), d.write(x, 0, 8)}}, {"w1", {d.write(x)}},
                    {"w2", {d.write(x)}}},
                {{0, 1}});
  ASSERT_EQ(d.kinds(), (kind_list{graph_node_race, graph_node_race}));
  EXPECT_EQ(d.diagnostics()[0].previous->graph_node, 0u);
  EXPECT_EQ(d.diagnostics()[0].current.graph_node, 2u);
  EXPECT_EQ(d.diagnostics()[1].previous->graph_node, 1u);
  EXPECT_EQ(d.diagnostics()[1].current.graph_node, 2u);
}

TEST(EngineGraphs, ReadOnlyNodesAndCyclesDoNotConfuseIt) {
  engine_driver d;
  const auto x = d.alloc(1024);
  const auto g = d.graph();
  d.instantiate(g, {{"r0", {d.read(x)}}, {"r1", {d.read(x)}}, {"w", {d.write(x)}}},
                {{0, 1}, {1, 0}, {1, 2}, {7, 1}});
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_EQ(d.eng().statistics().ignored_records, 1u);  // the edge from node 7
}

TEST(EngineGraphs, LaunchIsOneOperationOnItsStream) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(1024);
  const auto g = d.graph();
  d.instantiate(g, {{"fill", {d.write(x)}}, {"use", {d.read(x)}}}, {{0, 1}});
  d.launch(s1, {d.read(x)});
  d.launch_graph(g, s1);  // ordered after the read on s1
  d.launch(s2, {d.read(x)});  // not ordered after the launch
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::stream_race}));
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(r.previous->op, operation_kind::graph_node);
  EXPECT_EQ(r.previous->graph, g);
  EXPECT_EQ(r.previous->graph_node, 0u);
  EXPECT_EQ(r.previous->stream, s1);
}

TEST(EngineGraphs, CapturedWorkIsNotExecuted) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(1024);
  const auto g = d.graph();
  d.capture_begin(s1, g);
  d.launch(s1, {d.write(x)});
  d.capture_end(s1, g);
  d.launch(s2, {d.write(x)});
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_EQ(d.eng().statistics().accesses_captured, 1u);
}

TEST(EngineGraphs, SynchronizingACapturingStreamIsReported) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto g = d.graph();
  d.capture_begin(s1, g);
  d.sync(s1);
  d.query(s1, true);
  d.device_sync();
  ASSERT_EQ(d.kinds(), (kind_list{sync_during_capture, sync_during_capture,
                                  sync_during_capture}));
  EXPECT_EQ(d.diagnostics()[0].stream, s1);
  EXPECT_EQ(d.diagnostics()[0].current.op, operation_kind::stream_synchronize);
  EXPECT_EQ(d.diagnostics()[1].current.op, operation_kind::stream_query);
  EXPECT_EQ(d.diagnostics()[2].current.op, operation_kind::device_synchronize);
  EXPECT_EQ(d.diagnostics()[2].stream, s1);
  d.capture_end(s1, g);
  d.sync(s1);
  d.device_sync();
  EXPECT_EQ(d.diagnostics().size(), 3u);
}

TEST(EngineGraphs, DeviceSynchronizeOfAnotherDeviceIsFineDuringCapture) {
  engine_driver d;
  const auto s0 = d.stream(stream_flavor::blocking, 0);
  d.stream(stream_flavor::blocking, 1);
  d.capture_begin(s0, d.graph());
  d.device_sync(1);
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineGraphs, SynchronizingAnEventRecordedInCaptureIsReported) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto g = d.graph();
  const auto e = d.event();
  d.capture_begin(s1, g);
  d.record(e, s1);
  d.event_sync(e);
  EXPECT_EQ(d.kinds(), (kind_list{sync_during_capture}));
  EXPECT_EQ(d.diagnostics()[0].event, e);
}

TEST(EngineGraphs, WaitingOnCapturedEventForksTheCapture) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(64);
  const auto g = d.graph();
  const auto e = d.event();
  d.capture_begin(s1, g);
  d.record(e, s1);
  d.wait(e, s2);               // s2 joins the capture
  d.launch(s2, {d.write(x)});  // captured, not executed
  d.sync(s2);                  // illegal while capturing
  d.capture_end(s1, g);        // ends the capture on s2 too
  d.launch(s2, {d.write(x)});
  d.sync(s2);
  EXPECT_EQ(d.kinds(), (kind_list{sync_during_capture}));
  EXPECT_EQ(d.eng().statistics().accesses_captured, 1u);
}

TEST(EngineGraphs, WaitOnAnEventFromAnEndedCaptureOrdersNothing) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(64);
  const auto g = d.graph();
  const auto e = d.event();
  d.launch(s1, {d.write(x)});
  d.capture_begin(s1, g);
  d.record(e, s1);
  d.capture_end(s1, g);
  d.wait(e, s2);
  d.launch(s2, {d.read(x)});
  EXPECT_EQ(d.kinds(), (kind_list{diagnostic_kind::unrecorded_event,
                                  diagnostic_kind::stream_race}));
}

TEST(EngineGraphs, LaunchOfAnUnknownGraphIsCountedAndStillOrdersItsStream) {
  engine_driver d;
  const auto s1 = d.stream();
  d.launch_graph(graph_id{42}, s1);
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_EQ(d.eng().statistics().unknown_graph_launches, 1u);
}

TEST(EngineGraphs, GraphLaunchedOnTwoStreamsRacesWithItself) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(64);
  const auto g = d.graph();
  d.instantiate(g, {{"update", {d.read(x), d.write(x)}}}, {});
  d.launch_graph(g, s1);
  d.launch_graph(g, s2);
  // The node's read races with the other launch's write, and so does its
  // write: one diagnostic per access and hazard.
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::stream_race, diagnostic_kind::stream_race}));
  EXPECT_EQ(d.hazards(),
            (std::vector<hazard>{hazard::read_after_write, hazard::write_after_write}));
  EXPECT_EQ(d.diagnostics()[0].current.graph, g);
  EXPECT_EQ(d.diagnostics()[0].current.stream, s2);
  EXPECT_EQ(d.diagnostics()[0].previous->stream, s1);
}

// Note [Graph candidates wait for a launch]
access with_origin(access a, access_origin origin) {
  a.origin = origin;
  return a;
}

TEST(EngineGraphs, AnInferredNodePairIsACandidateOnlyOnceTheGraphIsLaunched) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(1024);
  const auto g = d.graph();
  const auto inferred = [&](access a) { return with_origin(a, access_origin::inferred); };
  d.instantiate(g, {{"fill", {inferred(d.write(x))}}, {"sum", {inferred(d.read(x))}}}, {});
  EXPECT_TRUE(d.diagnostics().empty());
  d.launch_graph(g, s1);
  ASSERT_EQ(d.kinds(), (kind_list{graph_node_race}));
  EXPECT_EQ(d.diagnostics()[0].certainty, diagnostic_certainty::candidate);
  d.launch_graph(g, s1);  // reported once
  EXPECT_EQ(d.diagnostics().size(), 1u);
}

TEST(EngineGraphs, MeasuredNodesLoggedAgainConfirmTheCandidateOfTheirCallSites) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(1024);
  const auto g = d.graph();
  const auto as = [&](access a, access_origin o) { return with_origin(a, o); };
  d.instantiate(g, {{"fill", {as(d.write(x), access_origin::inferred)}},
                    {"sum", {as(d.read(x), access_origin::inferred)}}}, {});
  d.launch_graph(g, s1);
  d.instantiate(g, {{"fill", {as(d.write(x, 0, 512), access_origin::measured)}},
                    {"sum", {as(d.read(x, 508, 4), access_origin::measured)}}}, {});
  d.launch_graph(g, s1);
  ASSERT_EQ(d.kinds(), (kind_list{graph_node_race}));
  EXPECT_EQ(d.diagnostics()[0].certainty, diagnostic_certainty::confirmed);
  EXPECT_EQ(d.diagnostics()[0].overlap_offset, 508u);
  EXPECT_EQ(d.diagnostics()[0].overlap_size, 4u);
  EXPECT_EQ(d.eng().statistics().confirmed_candidates, 1u);
}

TEST(EngineGraphs, MeasuredNodesThatDoNotOverlapLeaveNoCandidate) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(1024);
  const auto g = d.graph();
  const auto as = [&](access a, access_origin o) { return with_origin(a, o); };
  d.instantiate(g, {{"low", {as(d.write(x), access_origin::inferred)}},
                    {"high", {as(d.write(x), access_origin::inferred)}}}, {});
  d.instantiate(g, {{"low", {as(d.write(x, 0, 512), access_origin::measured)}},
                    {"high", {as(d.write(x, 512, 512), access_origin::measured)}}}, {});
  d.launch_graph(g, s1);
  EXPECT_TRUE(d.diagnostics().empty());
  // A later launch whose nodes were not measured is a candidate again.
  d.instantiate(g, {{"low", {as(d.write(x), access_origin::inferred)}},
                    {"high", {as(d.write(x), access_origin::inferred)}}}, {});
  d.launch_graph(g, s1);
  ASSERT_EQ(d.kinds(), (kind_list{graph_node_race}));
  EXPECT_EQ(d.diagnostics()[0].certainty, diagnostic_certainty::candidate);
}

TEST(EngineGraphs, GraphNodesOverBlocksOfOneSegmentAreComparedInSegmentBytes) {
  engine_driver d;
  const auto segment = d.alloc(4096);
  const auto a = d.block(segment, 0, 1024), b = d.block(segment, 1024, 1024);
  const auto g = d.graph();
  d.instantiate(g, {{"a", {d.write(a)}}, {"b", {d.write(b)}}, {"all", {d.read(segment)}}},
                {});
  // a and b are disjoint; the segment-wide read overlaps both.
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::graph_node_race,
                                  diagnostic_kind::graph_node_race}));
  EXPECT_EQ(d.diagnostics()[0].previous->graph_node, 0u);
  EXPECT_EQ(d.diagnostics()[0].current.graph_node, 2u);
  EXPECT_EQ(d.diagnostics()[1].previous->graph_node, 1u);
  EXPECT_EQ(d.diagnostics()[1].overlap_offset, 1024u);
  EXPECT_EQ(d.diagnostics()[1].overlap_size, 1024u);
}

}  // namespace
}  // namespace streamsan
