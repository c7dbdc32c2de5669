#include "harness/scenario_parser.h"

#include <gtest/gtest.h>

#include "harness/scenario_error.h"

namespace streamsan::harness {
namespace {

constexpr std::string_view minimal = R"(name: stream/side_sum_race
description: the canonical S-STREAM-2 example
rules:
  - id: S-STREAM-2
    text: "Operations on different streams may run concurrently"
twin: stream/side_sum_fixed
streams:
  - {name: side, flags: non_blocking, priority: -1}
events:
  - {name: e, flags: [timing, blocking_sync]}
buffers:
  - {name: A, kind: device, size: 4, fill: 0}
  - {name: S, kind: cached, size: 1, stream: side}
operations:
  - {op: launch, kernel: fill, stream: default, out: A, value: 1, label: fill}
  - {op: launch, kernel: reduce_sum, stream: side, in: "A[1:3]", out: S, label: sum}
  - {op: query, stream: side, label: q}
  - {op: host_read, src: A, label: r}
expect:
  diagnostics:
    - {kind: stream-race, hazard: read-after-write, buffer: A, current: sum, previous: fill}
  results: {q: true}
)";

constexpr std::string_view race_expectation =
    "  diagnostics:\n    - {kind: stream-race, hazard: read-after-write, buffer: A, current: sum, "
    "previous: fill}\n";

scenario parse(std::string_view text) { return parse_scenario(text, "scenarios/stream/side_sum_race.yaml"); }

// The message of the scenario_error that parsing `text` throws.
std::string error_of(std::string_view text, const std::string& file = "scenarios/stream/side_sum_race.yaml") {
  try {
    parse_scenario(text, file);
  } catch (const scenario_error& e) {
    return e.what();
  }
  return "no error";
}

std::string replace(std::string_view text, std::string_view from, std::string_view to) {
  std::string s(text);
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  s.replace(at, from.size(), to);
  return s;
}

TEST(ScenarioParser, ReadsDeclarationsOperationsAndExpectations) {
  const scenario s = parse(minimal);
  EXPECT_EQ(s.name, "stream/side_sum_race");
  ASSERT_EQ(s.rules.size(), 1u);
  EXPECT_EQ(s.rules[0].id, "S-STREAM-2");
  EXPECT_EQ(s.twin, "stream/side_sum_fixed");
  ASSERT_EQ(s.streams.size(), 1u);
  EXPECT_EQ(s.streams[0].flag, stream_flag::non_blocking);
  EXPECT_EQ(s.streams[0].priority, -1);
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_TRUE(s.events[0].timing);
  EXPECT_TRUE(s.events[0].blocking_sync);
  EXPECT_FALSE(s.events[0].interprocess);
  ASSERT_EQ(s.buffers.size(), 2u);
  EXPECT_EQ(s.buffers[0].fill, std::vector<float>(4, 0.0f));
  EXPECT_EQ(s.buffers[1].kind, buffer_kind::cached);
  EXPECT_EQ(s.buffers[1].stream, "side");
  ASSERT_EQ(s.operations.size(), 4u);
  const auto& sum = std::get<launch_op>(s.operations[1].body);
  EXPECT_EQ(sum.kernel, kernel_kind::reduce_sum);
  ASSERT_EQ(sum.buffers.size(), 2u);
  EXPECT_EQ(sum.buffers[0].buffer, "A");
  EXPECT_EQ(sum.buffers[0].begin, 1u);
  EXPECT_EQ(sum.buffers[0].end, 3u);
  EXPECT_EQ(sum.buffers[1].end, 1u);  // whole buffer S
  EXPECT_EQ(s.operations[1].where.line, 16);
  EXPECT_EQ(s.operations[1].where.column, 5);
  ASSERT_EQ(s.expect.diagnostics.size(), 1u);
  EXPECT_EQ(s.expect.diagnostics[0].kind, diagnostic_kind::stream_race);
  EXPECT_EQ(s.expect.diagnostics[0].hazard_kind, hazard::read_after_write);
  EXPECT_EQ(s.expect.diagnostics[0].previous, "fill");
  ASSERT_EQ(s.expect.results.size(), 1u);
  EXPECT_EQ(std::get<bool>(s.expect.results[0].value), true);
  EXPECT_TRUE(s.expects_diagnostics());
}

TEST(ScenarioParser, LaunchScalarsTakeDefaults) {
  const scenario s = parse(replace(minimal, "kernel: fill, stream: default, out: A, value: 1",
                                   "kernel: axpy, x: A, y: A"));
  const auto& axpy = std::get<launch_op>(s.operations[0].body);
  ASSERT_EQ(axpy.scalars.size(), 1u);
  EXPECT_EQ(axpy.scalars[0], 1.0);
  EXPECT_EQ(axpy.stream, "");  // the current stream
}

TEST(ScenarioParser, GuardsAreFlattenedIntoEnterBodyExit) {
  const scenario s = parse(replace(minimal, "  - {op: query, stream: side, label: q}\n",
                                   "  - op: device_guard\n"
                                   "    device: 0\n"
                                   "    body:\n"
                                   "      - {op: query, stream: side, label: q}\n"));
  ASSERT_EQ(s.operations.size(), 6u);
  EXPECT_TRUE(std::holds_alternative<device_guard_enter_op>(s.operations[2].body));
  EXPECT_TRUE(std::holds_alternative<query_op>(s.operations[3].body));
  EXPECT_TRUE(std::holds_alternative<device_guard_exit_op>(s.operations[4].body));
}

TEST(ScenarioParser, AllocOperationDefersTheBuffer) {
  const scenario s = parse(replace(replace(minimal, "{name: A, kind: device, size: 4, fill: 0}",
                                           "{name: A, kind: device, size: 4}"),
                                   "operations:\n", "operations:\n  - {op: alloc, buffer: A}\n"));
  EXPECT_TRUE(s.find_buffer("A")->deferred);
  EXPECT_FALSE(s.find_buffer("S")->deferred);
}

TEST(ScenarioParser, NoneMeansNoDiagnostics) {
  const scenario s = parse(replace(minimal, race_expectation, "  diagnostics: none\n"));
  EXPECT_TRUE(s.expect.diagnostics.empty());
  EXPECT_FALSE(s.expects_diagnostics());
}

TEST(ScenarioParser, FixedScenarioStatesValues) {
  const scenario s = parse(replace(replace(minimal, race_expectation, "  diagnostics: none\n"),
                                   "  results: {q: true}\n",
                                   "  buffers: {A: 1, S: [2]}\n  results: {q: true, r: [1, 1, 1, 1]}\n"));
  ASSERT_EQ(s.expect.buffers.size(), 2u);
  EXPECT_EQ(s.expect.buffers[0].values, std::vector<float>(4, 1.0f));
  EXPECT_EQ(s.expect.buffers[1].values, std::vector<float>{2.0f});
  ASSERT_EQ(s.expect.results.size(), 2u);
  EXPECT_EQ(std::get<std::vector<float>>(s.expect.results[1].value), std::vector<float>(4, 1.0f));
}

TEST(ScenarioParser, RacyScenarioCannotStateValues) {
  EXPECT_EQ(error_of(replace(minimal, "  results: {q: true}\n", "  buffers: {A: 1}\n")),
            "scenarios/stream/side_sum_race.yaml:22:12: a scenario that expects a race cannot "
            "expect buffer contents: they depend on the schedule (the fixed twin states them)");
}

TEST(ScenarioParser, UnknownKeyNamesThePlaceAndTheAcceptedKeys) {
  EXPECT_EQ(error_of(replace(minimal, "{name: side, flags", "{name: side, flagz")),
            "scenarios/stream/side_sum_race.yaml:8:18: unknown key 'flagz' in item 1 of 'streams' "
            "of scenario; expected name, device, flags or priority");
}

TEST(ScenarioParser, UnknownStreamListsTheDeclaredOnes) {
  EXPECT_EQ(error_of(replace(minimal, "stream: side, in:", "stream: sid, in:")),
            "scenarios/stream/side_sum_race.yaml:16:46: unknown stream 'sid' in 'stream' of "
            "launch at line 16 (kernel reduce_sum); declared: default, per_thread, side");
}

TEST(ScenarioParser, SliceOutsideTheBufferIsRejected) {
  EXPECT_EQ(error_of(replace(minimal, "A[1:3]", "A[1:9]")),
            "scenarios/stream/side_sum_race.yaml:16:56: slice A[1:9] in 'in' of launch at line 16 "
            "(kernel reduce_sum) is empty or outside buffer A (4 elements)");
}

TEST(ScenarioParser, DuplicateLabelPointsAtTheFirstUse) {
  EXPECT_EQ(error_of(replace(minimal, "label: q}", "label: fill}")),
            "scenarios/stream/side_sum_race.yaml:17:38: duplicate label 'fill' (first used at "
            "scenarios/stream/side_sum_race.yaml:15:5)");
}

TEST(ScenarioParser, ExpectationLabelMustExist) {
  EXPECT_EQ(error_of(replace(minimal, "previous: fill}", "previous: fil}")),
            "scenarios/stream/side_sum_race.yaml:21:88: unknown operation label 'fil' in "
            "'previous' of item 1 of 'diagnostics' of 'expect' of scenario; labels: fill, sum, q, r");
}

TEST(ScenarioParser, RaceExpectationMustNameBothOperations) {
  EXPECT_EQ(error_of(replace(minimal, ", previous: fill}", "}")),
            "scenarios/stream/side_sum_race.yaml:21:7: missing required key 'previous' in item 1 "
            "of 'diagnostics' of 'expect' of scenario");
}

TEST(ScenarioParser, UnknownRuleIdIsRejected) {
  EXPECT_EQ(error_of(replace(minimal, "id: S-STREAM-2", "id: S-STREAM-99")),
            "scenarios/stream/side_sum_race.yaml:4:9: unknown rule id 'S-STREAM-99'; expected an "
            "S-... id of semantics.md");
}

TEST(ScenarioParser, NameMustMatchTheFile) {
  EXPECT_EQ(error_of(minimal, "scenarios/stream/other.yaml"),
            "scenarios/stream/other.yaml:1:7: scenario name 'stream/side_sum_race' does not match "
            "its file; expected 'stream/other' (the path below the corpus root, without .yaml)");
}

TEST(ScenarioParser, YamlSyntaxErrorsCarryTheMark) {
  EXPECT_EQ(error_of("name: [unclosed\n"),
            "scenarios/stream/side_sum_race.yaml:2:1: YAML syntax error: end of sequence flow not found");
}

TEST(ScenarioParser, ResultTypeFollowsTheOperation) {
  EXPECT_EQ(error_of(replace(minimal, "results: {q: true", "results: {q: [1]")),
            "scenarios/stream/side_sum_race.yaml:22:16: expected true or false for the result of 'q', got a list");
  EXPECT_EQ(error_of(replace(minimal, "results: {q: true", "results: {fill: true")),
            "scenarios/stream/side_sum_race.yaml:22:13: operation 'fill' (launch fill) has no "
            "result to check; results exist for query, host_read and memory_stats");
}

}  // namespace
}  // namespace streamsan::harness
