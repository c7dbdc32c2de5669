#include "harness/outcome_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/scenario_parser.h"

namespace streamsan::harness {
namespace {

using testing::ElementsAre;
using testing::IsEmpty;

// The canonical race and its twin's values, in one file for the tests.
constexpr std::string_view racy = R"(name: event/record_overwrites_snapshot_race
rules:
  - {id: S-EVENT-1, text: "Recording again overwrites what the event captures"}
twin: event/record_overwrites_snapshot_fixed
streams:
  - {name: side, flags: non_blocking}
events:
  - {name: e}
buffers:
  - {name: A, kind: device, size: 4, fill: 0}
  - {name: S, kind: device, size: 1, fill: 0}
operations:
  - {op: launch, kernel: fill, stream: default, out: A, value: 1, label: fill}
  - {op: launch, kernel: reduce_sum, stream: side, in: A, out: S, label: sum}
  - {op: query, event: e, label: q}
  - {op: elapsed_time, start: e, end: e, label: t}
  - {op: synchronize}
expect:
  diagnostics:
    - {kind: stream-race, hazard: read-after-write, buffer: A, current: sum, previous: fill}
  results: {q: true}
  errors:
    - {at: t, message: "timing"}
)";

constexpr std::string_view fixed = R"(name: event/record_overwrites_snapshot_fixed
rules:
  - {id: S-EVENT-1, text: "Recording again overwrites what the event captures"}
buffers:
  - {name: B, kind: pinned, size: 4, fill: 0}
operations:
  - {op: host_read, src: B, label: r}
  - {op: memory_stats, label: m}
expect:
  diagnostics: none
  buffers: {B: 1}
  results: {r: [1, 2, 3, 4], m: {allocated_bytes.current: 512}}
)";

scenario parse(std::string_view text, std::string_view name) {
  return parse_scenario(text, corpus_place("scenarios/" + std::string(name) + ".yaml", "scenarios"));
}

// What a correct replay of `racy` observes.
outcome racy_outcome() {
  outcome o;
  o.diagnostics.push_back({diagnostic_kind::stream_race, hazard::read_after_write, "A", 1, 0, "", "", 1});
  o.results[2] = true;
  o.errors.push_back({3, "elapsed_time of event#1 and event#1: event#1 has no timing"});
  return o;
}

TEST(OutcomeCheck, MatchingOutcomePasses) {
  const scenario s = parse(racy, "event/record_overwrites_snapshot_race");
  EXPECT_THAT(check_outcome(s, racy_outcome()), IsEmpty());
  EXPECT_EQ(expected_verdict(s), "stream-race");
  EXPECT_EQ(seen_verdict(racy_outcome()), "stream-race");
}

TEST(OutcomeCheck, MissingDiagnosticNamesScenarioOperationsAndBuffer) {
  const scenario s = parse(racy, "event/record_overwrites_snapshot_race");
  outcome o = racy_outcome();
  o.diagnostics.clear();
  EXPECT_THAT(check_outcome(s, o),
              ElementsAre("scenario event/record_overwrites_snapshot_race: expected stream-race "
                          "(read-after-write) between 'sum' and 'fill' on buffer A, saw none"));
  EXPECT_EQ(seen_verdict(o), "clean");
}

TEST(OutcomeCheck, DifferentDiagnosticIsListedAsSeen) {
  const scenario s = parse(racy, "event/record_overwrites_snapshot_race");
  outcome o = racy_outcome();
  o.diagnostics[0].hazard_kind = hazard::write_after_write;
  o.diagnostics[0].previous = 4;  // the unlabelled synchronize
  EXPECT_THAT(check_outcome(s, o),
              ElementsAre("scenario event/record_overwrites_snapshot_race: expected stream-race "
                          "(read-after-write) between 'sum' and 'fill' on buffer A, saw "
                          "stream-race (write-after-write) between 'sum' and the synchronize "
                          "device at line 17 on buffer A"));
}

TEST(OutcomeCheck, UnexpectedDiagnosticIsReported) {
  const scenario s = parse(racy, "event/record_overwrites_snapshot_race");
  outcome o = racy_outcome();
  o.diagnostics.push_back({diagnostic_kind::unrecorded_event, hazard::none, "", 2, no_operation, "e", "", 1});
  EXPECT_THAT(check_outcome(s, o),
              ElementsAre("scenario event/record_overwrites_snapshot_race: unexpected "
                          "unrecorded-event at 'q' on event e"));
  EXPECT_EQ(seen_verdict(o), "stream-race+unrecorded-event");
}

TEST(OutcomeCheck, WrongQueryAnswerAndMissingError) {
  const scenario s = parse(racy, "event/record_overwrites_snapshot_race");
  outcome o = racy_outcome();
  o.results[2] = false;
  o.errors.clear();
  EXPECT_THAT(check_outcome(s, o),
              ElementsAre("scenario event/record_overwrites_snapshot_race: result of 'q' (query "
                          "event): expected true saw false",
                          "scenario event/record_overwrites_snapshot_race: operation 't': expected "
                          "error containing \"timing\", saw none"));
}

TEST(OutcomeCheck, UnexpectedErrorNamesTheOperation) {
  const scenario s = parse(racy, "event/record_overwrites_snapshot_race");
  outcome o = racy_outcome();
  o.errors.push_back({0, "launching fill on stream#1: out of range"});
  EXPECT_THAT(check_outcome(s, o),
              ElementsAre("scenario event/record_overwrites_snapshot_race: operation 'fill': "
                          "unexpected error \"launching fill on stream#1: out of range\""));
}

TEST(OutcomeCheck, BufferDifferenceGivesBothValuesAndTheIndex) {
  const scenario s = parse(fixed, "event/record_overwrites_snapshot_fixed");
  outcome o;
  o.buffers["B"] = {0, 1, 1, 1};
  o.results[0] = std::vector<float>{1, 2, 3, 4};
  o.results[1] = stat_values{{"allocated_bytes.current", 512}, {"num_ooms", 0}};
  EXPECT_THAT(check_outcome(s, o),
              ElementsAre("scenario event/record_overwrites_snapshot_fixed: buffer B after final "
                          "synchronize: expected [1,1,1,1] saw [0,1,1,1] at index 0"));
  EXPECT_THAT(check_outcome(s, o, false), IsEmpty());
}

TEST(OutcomeCheck, HostReadAndStatisticsDifferences) {
  const scenario s = parse(fixed, "event/record_overwrites_snapshot_fixed");
  outcome o;
  o.buffers["B"] = {1, 1, 1, 1};
  o.results[0] = std::vector<float>{1, 2, 3.5f, 4};
  o.results[1] = stat_values{{"allocated_bytes.current", 1024}};
  EXPECT_THAT(check_outcome(s, o),
              ElementsAre("scenario event/record_overwrites_snapshot_fixed: result of 'r' "
                          "(host_read): expected [1,2,3,4] saw [1,2,3.5,4] at index 2",
                          "scenario event/record_overwrites_snapshot_fixed: result of 'm' "
                          "(memory_stats): allocated_bytes.current expected 512 saw 1024"));
}

TEST(OutcomeCheck, ReplayProblemsFailTheScenario) {
  const scenario s = parse(fixed, "event/record_overwrites_snapshot_fixed");
  outcome o;
  o.buffers["B"] = {1, 1, 1, 1};
  o.results[0] = std::vector<float>{1, 2, 3, 4};
  o.results[1] = stat_values{{"allocated_bytes.current", 512}};
  o.problems.push_back("the final synchronize failed: capture still open");
  EXPECT_THAT(check_outcome(s, o),
              ElementsAre("scenario event/record_overwrites_snapshot_fixed: the final "
                          "synchronize failed: capture still open"));
}

TEST(OutcomeCheck, ValuesCompareWithSmallTolerance) {
  EXPECT_EQ(first_difference({1.0f, 1e6f}, {1.0f, 1e6f + 1.0f}), no_operation);
  EXPECT_EQ(first_difference({1.0f, 2.0f}, {1.0f, 2.001f}), 1u);
  EXPECT_EQ(first_difference({1.0f, 2.0f}, {1.0f}), 1u);
  EXPECT_EQ(format_values({0.1f, 4.0f, -2.5f}), "[0.1,4,-2.5]");
}

}  // namespace
}  // namespace streamsan::harness
