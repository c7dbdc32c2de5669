// Atomics are their own access kind (Note [Atomics are their own access
// kind]): between streams, inside graphs, and against frees.
#include <gtest/gtest.h>

#include <string>

#include "tests/engine/engine_driver.h"

namespace streamsan {
namespace engine_atomics_test {  // Note [Unity test programs in the sanitizer passes]
namespace {

using testing::engine_driver;
using testing::kind_list;
constexpr auto stream_race = diagnostic_kind::stream_race;
constexpr auto graph_node_race = diagnostic_kind::graph_node_race;

using testing::all_access_modes;

std::string pair_name(access_mode previous, access_mode current) {
  return std::string(to_string(previous)) + " then " + std::string(to_string(current));
}

TEST(EngineAtomics, AtomicsFromTwoStreamsOnOneCounterDoNotRace) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking), s2 = d.stream(stream_flavor::non_blocking);
  const auto counter = d.alloc(4);
  d.launch(s1, {d.touch(counter, access_mode::atomic, access_origin::measured)}, "count");
  d.launch(s2, {d.touch(counter, access_mode::atomic, access_origin::measured)}, "count");
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineAtomics, AnAtomicAndAPlainStoreRaceAndTheReportNamesTheAtomic) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking), s2 = d.stream(stream_flavor::non_blocking);
  const auto counter = d.alloc(4);
  d.launch(s1, {d.touch(counter, access_mode::write, access_origin::measured)}, "reset");
  d.launch(s2, {d.touch(counter, access_mode::atomic, access_origin::measured)}, "count");
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(r.hazard_kind, hazard::write_after_write);  // an atomic counts as a write
  EXPECT_EQ(r.current.mode, access_mode::atomic);
  EXPECT_EQ(r.previous->mode, access_mode::write);
  EXPECT_EQ(r.current.origin, access_origin::measured);
  EXPECT_EQ(r.certainty, diagnostic_certainty::confirmed);
}

TEST(EngineAtomics, AnAtomicAfterAnUnorderedReadIsWriteAfterRead) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking), s2 = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(64);
  d.launch(s1, {d.read(x)});
  d.launch(s2, {d.touch(x, 0, 4, access_mode::atomic)});
  ASSERT_EQ(d.hazards(), (std::vector<hazard>{hazard::write_after_read}));
}

TEST(EngineAtomics, AnEventOrdersAnAtomicAfterAPlainWrite) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking), s2 = d.stream(stream_flavor::non_blocking);
  const auto counter = d.alloc(4);
  const auto e = d.event();
  d.launch(s1, {d.touch(counter, access_mode::write)}, "reset");
  d.record(e, s1);
  d.wait(e, s2);
  d.launch(s2, {d.touch(counter, access_mode::atomic)}, "count");
  d.launch(s1, {d.touch(counter, access_mode::atomic)}, "count");
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineAtomics, EveryPairOfModesOnTwoStreamsFollowsTheRule) {
  for (const access_mode previous : all_access_modes) {
    for (const access_mode current : all_access_modes) {
      engine_driver d;
      const auto s1 = d.stream(stream_flavor::non_blocking);
      const auto s2 = d.stream(stream_flavor::non_blocking);
      const auto x = d.alloc(64);
      d.launch(s1, {d.touch(x, previous)});
      d.launch(s2, {d.touch(x, 16, 64 - 16, current)});
      SCOPED_TRACE(pair_name(previous, current));
      if (!conflicts(current, previous)) {
        EXPECT_TRUE(d.diagnostics().empty());
        continue;
      }
      ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
      const diagnostic& r = d.diagnostics()[0];
      EXPECT_EQ(r.hazard_kind, hazard_between(current, previous));
      EXPECT_EQ(r.current.mode, current);
      EXPECT_EQ(r.previous->mode, previous);
      EXPECT_EQ(r.overlap_offset, 16u);
      EXPECT_EQ(r.overlap_size, 48u);
    }
  }
}

TEST(EngineAtomics, EveryPairOfModesOnTwoGraphNodesFollowsTheRule) {
  for (const access_mode previous : all_access_modes) {
    for (const access_mode current : all_access_modes) {
      for (const bool edge : {false, true}) {
        engine_driver d;
        const auto x = d.alloc(64);
        const auto g = d.graph();
        std::vector<graph_edge> edges;
        if (edge) edges.push_back({0, 1});
        d.instantiate(g, {{"a", {d.touch(x, 0, 32, previous)}}, {"b", {d.touch(x, current)}}},
                      edges);
        SCOPED_TRACE(pair_name(previous, current) + (edge ? " with an edge" : ""));
        if (edge || !conflicts(current, previous)) {
          EXPECT_TRUE(d.diagnostics().empty());
          continue;
        }
        ASSERT_EQ(d.kinds(), (kind_list{graph_node_race}));
        const diagnostic& r = d.diagnostics()[0];
        EXPECT_EQ(r.hazard_kind, hazard_between(current, previous));
        EXPECT_EQ(r.current.mode, current);
        EXPECT_EQ(r.previous->mode, previous);
        EXPECT_EQ(r.current.graph_node, 1u);
        EXPECT_EQ(r.overlap_size, 32u);
      }
    }
  }
}

TEST(EngineAtomics, GraphNodesUpdatingOneCounterAtomicallyDoNotRace) {
  engine_driver d;
  const auto counter = d.alloc(4), out = d.alloc(64);
  const auto g = d.graph();
  d.instantiate(g,
                {{"a", {d.touch(counter, access_mode::atomic), d.touch(out, 0, 32, access_mode::write)}},
                 {"b", {d.touch(counter, access_mode::atomic), d.touch(out, 32, 32, access_mode::write)}}},
                {});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineAtomics, AFreeWhileAnAtomicMayRunIsReported) {
  engine_driver d;
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(4, memory_kind::pinned_host);
  d.launch(s, {d.touch(x, access_mode::atomic)});
  d.free(x, free_mode::unsynchronized);
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::free_while_in_use}));
  EXPECT_EQ(d.diagnostics()[0].hazard_kind, hazard::write_after_write);
  EXPECT_EQ(d.diagnostics()[0].previous->mode, access_mode::atomic);
}

TEST(EngineAtomics, HistoryCountsAtomics) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking), s2 = d.stream(stream_flavor::non_blocking);
  const auto counter = d.alloc(4);
  d.launch(s1, {d.touch(counter, access_mode::atomic)});
  d.launch(s2, {d.touch(counter, access_mode::atomic)});
  EXPECT_EQ(d.eng().statistics().history_atomics, 2u);
}

}  // namespace
}  // namespace engine_atomics_test
}  // namespace streamsan
