// What the engine keeps so that reports can explain a race: its cause
// (Note [Causes]), a graph race's node stacks and missing edge, and the
// timeline around it (Note [Race timelines]).
#include <gtest/gtest.h>

#include <array>

#include "tests/engine/engine_driver.h"

namespace streamsan {
namespace {

using testing::engine_driver;
using testing::kind_list;

const diagnostic& only_race(const engine_driver& d) {
  const diagnostic* race = nullptr;
  for (const auto& x : d.diagnostics()) {
    if (is_race(x.kind)) {
      EXPECT_EQ(race, nullptr) << "more than one race";
      race = &x;
    }
  }
  EXPECT_NE(race, nullptr);
  return *race;
}

// ---- causes ----

TEST(Causes, AWaitOnANeverRecordedEventIsTheCauseAndBothReportsAreLinked) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto e = d.event();
  const auto a = d.alloc(64);
  d.launch(s1, {d.write(a)}, "k_write");
  d.wait(e, s2);
  d.launch(s2, {d.read(a)}, "k_read");
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::unrecorded_event, diagnostic_kind::stream_race}));
  const diagnostic& wait = d.diagnostics()[0];
  const diagnostic& race = d.diagnostics()[1];
  EXPECT_EQ(wait.id, 1u);
  EXPECT_EQ(race.id, 2u);
  ASSERT_TRUE(race.cause);
  EXPECT_EQ(race.cause->kind, cause_kind::unrecorded_event);
  EXPECT_EQ(race.cause->event, e);
  EXPECT_EQ(race.cause->call.op, operation_kind::event_wait);
  EXPECT_EQ(race.cause->call.stream, s2);
  EXPECT_EQ(race.cause->reported_as, wait.id);
  EXPECT_EQ(wait.failed_to_prevent, (std::vector<std::uint32_t>{race.id}));
}

TEST(Causes, RepeatsOfTheRaceAreLinkedOnce) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto e = d.event();
  const auto a = d.alloc(64);
  for (int i = 0; i < 3; ++i) {
    d.launch(s1, {d.write(a)}, "k_write");
    d.wait(e, s2);
    d.launch(s2, {d.read(a)}, "k_read");
  }
  // The write-after-read between iterations is a race of its own, with no cause.
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::unrecorded_event, diagnostic_kind::stream_race,
                                  diagnostic_kind::stream_race}));
  EXPECT_EQ(d.diagnostics()[1].count, 3u);
  EXPECT_EQ(d.diagnostics()[0].failed_to_prevent,
            (std::vector<std::uint32_t>{d.diagnostics()[1].id}));
  EXPECT_FALSE(d.diagnostics()[2].cause);
}

TEST(Causes, AnEventRecordedBeforeTheProducerDoesNotCoverIt) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto e = d.event();
  const auto a = d.alloc(64);
  d.record(e, s1);
  d.launch(s1, {d.write(a)}, "k_write");
  d.wait(e, s2);
  d.launch(s2, {d.read(a)}, "k_read");
  const auto& race = only_race(d);
  ASSERT_TRUE(race.cause);
  EXPECT_EQ(race.cause->kind, cause_kind::event_recorded_before_producer);
  EXPECT_EQ(race.cause->named, s1);
  ASSERT_TRUE(race.cause->record);
  EXPECT_EQ(race.cause->record->stream, s1);
  EXPECT_LT(race.cause->record->seq, race.previous->seq);
  EXPECT_EQ(race.cause->reported_as, 0u);
}

TEST(Causes, AnEventOfAnotherStreamOrdersNothingUseful) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream(), s3 = d.stream();
  const auto e = d.event();
  const auto a = d.alloc(64);
  d.launch(s1, {d.write(a)});
  d.record(e, s3);
  d.wait(e, s2);
  d.launch(s2, {d.read(a)});
  const auto& race = only_race(d);
  ASSERT_TRUE(race.cause);
  EXPECT_EQ(race.cause->kind, cause_kind::waited_other_stream);
  EXPECT_EQ(race.cause->named, s3);
  EXPECT_EQ(race.cause->event, e);
}

TEST(Causes, WaitStreamOfTheWrongStream) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking);
  const auto s2 = d.stream(stream_flavor::non_blocking);
  const auto s3 = d.stream(stream_flavor::non_blocking);
  const auto a = d.alloc(64);
  d.launch(s1, {d.write(a)});
  d.wait_stream(s2, s3);
  d.launch(s2, {d.read(a)});
  const auto& race = only_race(d);
  ASSERT_TRUE(race.cause);
  EXPECT_EQ(race.cause->kind, cause_kind::waited_other_stream);
  EXPECT_EQ(race.cause->call.op, operation_kind::stream_wait_stream);
  EXPECT_EQ(race.cause->named, s3);
}

TEST(Causes, TheHostSynchronizedAnotherStream) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto h = d.alloc(64, memory_kind::pinned_host);
  d.launch(s1, {d.write(h)});
  d.sync(s2);
  d.host({d.read(h)});
  const auto& race = only_race(d);
  EXPECT_EQ(race.kind, diagnostic_kind::host_device_race);
  ASSERT_TRUE(race.cause);
  EXPECT_EQ(race.cause->kind, cause_kind::synchronized_other_stream);
  EXPECT_EQ(race.cause->call.op, operation_kind::stream_synchronize);
  EXPECT_EQ(race.cause->call.context, context_kind::host_thread);
  EXPECT_EQ(race.cause->named, s2);
}

TEST(Causes, AQueryThatReturnedNotReady) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto h = d.alloc(64, memory_kind::pinned_host);
  d.launch(s1, {d.write(h)});
  d.query(s1, false);
  d.host({d.read(h)});
  const auto& race = only_race(d);
  ASSERT_TRUE(race.cause);
  EXPECT_EQ(race.cause->kind, cause_kind::query_not_ready);
  EXPECT_EQ(race.cause->named, s1);
}

TEST(Causes, AnEventQueryThatReturnedNotReady) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto e = d.event();
  const auto h = d.alloc(64, memory_kind::pinned_host);
  d.launch(s1, {d.write(h)});
  d.record(e, s1);
  d.event_query(e, false);
  d.host({d.read(h)});
  const auto& race = only_race(d);
  ASSERT_TRUE(race.cause);
  EXPECT_EQ(race.cause->kind, cause_kind::query_not_ready);
  EXPECT_EQ(race.cause->event, e);
}

TEST(Causes, SynchronizingWithANeverRecordedEvent) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto e = d.event();
  const auto h = d.alloc(64, memory_kind::pinned_host);
  d.launch(s1, {d.write(h)});
  d.event_sync(e);
  d.host({d.read(h)});
  ASSERT_EQ(d.kinds(),
            (kind_list{diagnostic_kind::unrecorded_event, diagnostic_kind::host_device_race}));
  const auto& race = d.diagnostics()[1];
  ASSERT_TRUE(race.cause);
  EXPECT_EQ(race.cause->kind, cause_kind::unrecorded_event);
  EXPECT_EQ(race.cause->call.op, operation_kind::event_synchronize);
  EXPECT_EQ(d.diagnostics()[0].failed_to_prevent, (std::vector<std::uint32_t>{race.id}));
}

TEST(Causes, AHostFunctionOnAnotherStream) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking);
  const auto s2 = d.stream(stream_flavor::non_blocking);
  const auto h = d.alloc(64, memory_kind::pinned_host);
  d.launch(s1, {d.write(h)});
  d.host_func(s2, {d.read(h)});
  const auto& race = only_race(d);
  ASSERT_TRUE(race.cause);
  EXPECT_EQ(race.cause->kind, cause_kind::host_function_on_other_stream);
  EXPECT_EQ(race.cause->call.op, operation_kind::host_func);
  EXPECT_EQ(race.cause->named, s2);
}

TEST(Causes, NoneWhenNothingTriedToOrderThem) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto a = d.alloc(64);
  d.launch(s1, {d.write(a)});
  d.launch(s2, {d.read(a)});
  EXPECT_FALSE(only_race(d).cause);
}

TEST(Causes, AWaitBeforeTheProducerWasEnqueuedIsNotBlamed) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream(), s3 = d.stream();
  const auto e = d.event();
  const auto a = d.alloc(64);
  d.record(e, s3);
  d.wait(e, s2);  // about something else
  d.launch(s1, {d.write(a)});
  d.launch(s2, {d.read(a)});
  EXPECT_FALSE(only_race(d).cause);
}

TEST(Causes, AReadySynchronizeOrdersAndLeavesNothingToExplain) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto h = d.alloc(64, memory_kind::pinned_host);
  d.launch(s1, {d.write(h)});
  d.query(s1, false);
  d.query(s1, true);
  d.host({d.read(h)});
  EXPECT_TRUE(d.diagnostics().empty());
}

// ---- graphs ----

TEST(GraphGaps, NodesCarryTheirOwnStacksAndTheMissingEdge) {
  engine_driver d;
  const auto s = d.stream();
  const auto a = d.alloc(64);
  const auto g = d.graph();
  const std::array<std::uint64_t, 2> added_write{0x1000, 0x2000};
  const std::array<std::uint64_t, 2> added_read{0x1100, 0x2000};
  const stack_id write_stack = d.rec().intern_stack(added_write);
  const stack_id read_stack = d.rec().intern_stack(added_read);
  d.instantiate(g,
                {{"init", {d.write(a)}}, {"k_write", {d.write(a)}, write_stack},
                 {"k_read", {d.read(a)}, read_stack}},
                {{0, 1}, {0, 2}});
  d.launch_graph(g, s);
  const auto& race = only_race(d);
  EXPECT_EQ(race.kind, diagnostic_kind::graph_node_race);
  EXPECT_EQ(race.previous->graph_node, 1u);
  EXPECT_EQ(race.current.graph_node, 2u);
  EXPECT_EQ(race.previous->stack, write_stack);
  EXPECT_EQ(race.current.stack, read_stack);
  ASSERT_TRUE(race.graph);
  EXPECT_EQ(race.graph->node_count, 3u);
  ASSERT_EQ(race.graph->previous_depends_on.size(), 1u);
  EXPECT_EQ(race.graph->previous_depends_on[0].index, 0u);
  ASSERT_EQ(race.graph->current_depends_on.size(), 1u);
  EXPECT_EQ(d.eng().tables().string(race.graph->current_depends_on[0].name), "init");
}

// ---- timelines ----

engine_options windowed(std::uint32_t window = 64, std::uint32_t ops = 40, std::uint32_t races = 64) {
  engine_options o;
  o.timeline_window = window;
  o.timeline_ops = ops;
  o.timeline_races = races;
  return o;
}

TEST(Timelines, NoneUnlessAsked) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto a = d.alloc(64);
  d.launch(s1, {d.write(a)});
  d.launch(s2, {d.read(a)});
  EXPECT_EQ(only_race(d).timeline, nullptr);
}

TEST(Timelines, OperationsInIssueOrderWithTheEdgesTheEngineApplied) {
  engine_driver d(false, windowed());
  const auto s1 = d.stream(), s2 = d.stream();
  const auto e = d.event();
  const auto a = d.alloc(64);
  d.record(e, s1);
  d.launch(s1, {d.write(a)}, "k_write");
  d.wait(e, s2);
  d.launch(s2, {d.read(a)}, "k_read");
  const auto& race = only_race(d);
  ASSERT_NE(race.timeline, nullptr);
  const race_timeline& t = *race.timeline;
  ASSERT_EQ(t.ops.size(), 4u);
  EXPECT_EQ(t.ops[0].op, operation_kind::event_record);
  EXPECT_EQ(t.ops[0].event, e);
  EXPECT_EQ(t.ops[1].op, operation_kind::kernel);
  EXPECT_EQ(t.ops[2].op, operation_kind::event_wait);
  EXPECT_EQ(t.ops[3].stream, s2);
  EXPECT_EQ(t.previous, 1u);
  EXPECT_EQ(t.current, 3u);
  ASSERT_EQ(t.edges.size(), 1u);
  EXPECT_EQ(t.edges[0].from, 0u);
  EXPECT_EQ(t.edges[0].to, 2u);
  EXPECT_EQ(t.edges[0].kind, timeline_edge_kind::event);
  EXPECT_FALSE(t.graph);
}

TEST(Timelines, HostActionsSynchronizesAndIssueOrder) {
  engine_driver d(false, windowed());
  const auto s1 = d.stream(stream_flavor::non_blocking);
  const auto s2 = d.stream(stream_flavor::non_blocking);
  const auto h = d.alloc(64, memory_kind::pinned_host);
  const auto b = d.alloc(64);
  d.host({d.write(h)});             // 0: thread
  d.launch(s1, {d.read(h)});        // 1: s1, issued after 0
  d.sync(s1);                       // 2: thread joins s1
  d.launch(s2, {d.write(b)});       // 3: s2, issued after 2
  d.launch(s1, {d.read(b)});        // 4: s1 races with 3
  const auto& race = only_race(d);
  ASSERT_NE(race.timeline, nullptr);
  const auto& t = *race.timeline;
  ASSERT_EQ(t.ops.size(), 5u);
  EXPECT_EQ(t.ops[2].op, operation_kind::stream_synchronize);
  EXPECT_EQ(t.ops[2].target, s1);
  std::vector<std::tuple<std::uint32_t, std::uint32_t, timeline_edge_kind>> edges;
  for (const auto& e : t.edges) edges.emplace_back(e.from, e.to, e.kind);
  EXPECT_EQ(edges, (decltype(edges){{0, 1, timeline_edge_kind::issue},
                                    {1, 2, timeline_edge_kind::stream_sync},
                                    {2, 3, timeline_edge_kind::issue},
                                    {2, 4, timeline_edge_kind::issue}}));
  EXPECT_EQ(t.previous, 3u);
  EXPECT_EQ(t.current, 4u);
}

TEST(Timelines, TheWindowIsBoundedAndAnOldPreviousStillShows) {
  engine_driver d(false, windowed(/*window=*/8, /*ops=*/4));
  const auto s1 = d.stream(), s2 = d.stream();
  const auto a = d.alloc(64), other = d.alloc(64);
  d.launch(s1, {d.write(a)}, "old_write");
  for (int i = 0; i < 20; ++i) d.launch(s2, {d.write(other)});
  d.launch(s2, {d.read(a)}, "late_read");
  const auto& race = only_race(d);
  ASSERT_NE(race.timeline, nullptr);
  const auto& t = *race.timeline;
  EXPECT_EQ(t.ops.size(), 5u);  // the previous operation + 4
  EXPECT_TRUE(t.previous_outside_window);
  EXPECT_EQ(t.previous, 0u);
  EXPECT_EQ(d.eng().tables().string(t.ops[0].name), "old_write");
  EXPECT_EQ(t.current, 4u);
}

TEST(Timelines, APreviousStillInTheWindowCountsWhatWasLeftOut) {
  engine_driver d(false, windowed(/*window=*/64, /*ops=*/4));
  const auto s1 = d.stream(), s2 = d.stream();
  const auto a = d.alloc(64), other = d.alloc(64);
  d.launch(s1, {d.write(a)});
  for (int i = 0; i < 10; ++i) d.launch(s2, {d.write(other)});
  d.launch(s2, {d.read(a)});
  const auto& t = *only_race(d).timeline;
  EXPECT_FALSE(t.previous_outside_window);
  EXPECT_EQ(t.ops.size(), 5u);
  EXPECT_EQ(t.omitted, 7u);  // 10 launches, 3 of them shown
}

TEST(Timelines, OnlySoManyRacesKeepOne) {
  engine_driver d(false, windowed(64, 40, /*races=*/2));
  const auto s1 = d.stream(), s2 = d.stream();
  for (int i = 0; i < 3; ++i) {
    const auto a = d.alloc(64);
    d.launch(s1, {d.write(a)}, "w" + std::to_string(i));
    d.launch(s2, {d.read(a)}, "r" + std::to_string(i));
  }
  ASSERT_EQ(d.diagnostics().size(), 3u);
  EXPECT_NE(d.diagnostics()[0].timeline, nullptr);
  EXPECT_NE(d.diagnostics()[1].timeline, nullptr);
  EXPECT_EQ(d.diagnostics()[2].timeline, nullptr);
  EXPECT_GT(d.eng().statistics().report_bytes, 0u);
}

TEST(Timelines, AGraphRaceShowsTheNodesAndTheirDependencies) {
  engine_driver d(false, windowed());
  const auto a = d.alloc(64);
  const auto g = d.graph();
  d.instantiate(g, {{"init", {d.write(a)}}, {"k_write", {d.write(a)}}, {"k_read", {d.read(a)}}},
                {{0, 1}, {0, 2}});
  const auto& race = only_race(d);
  ASSERT_NE(race.timeline, nullptr);
  const auto& t = *race.timeline;
  EXPECT_TRUE(t.graph);
  ASSERT_EQ(t.ops.size(), 3u);
  EXPECT_EQ(t.edges.size(), 2u);
  EXPECT_EQ(t.previous, 1u);
  EXPECT_EQ(t.current, 2u);
}

}  // namespace
}  // namespace streamsan
