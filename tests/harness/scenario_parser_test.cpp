#include "harness/scenario_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "harness/rule_catalog.h"
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

// The tests' files lie below a corpus root "scenarios" (it need not exist).
scenario_place in_corpus(const std::string& file = "scenarios/stream/side_sum_race.yaml") {
  return corpus_place(file, "scenarios");
}

scenario parse(std::string_view text) { return parse_scenario(text, in_corpus()); }

std::string race_expectation_of_standalone() {
  return "  diagnostics:\n    - {kind: stream-race, hazard: write-after-write, buffer: A, "
         "current: scale, previous: fill}\n";
}

// The message of the scenario_error that parsing `text` throws.
std::string error_of(std::string_view text, const scenario_place& place = in_corpus()) {
  try {
    parse_scenario(text, place);
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
            "of scenario; did you mean 'flags'? (expected name, device, flags or priority)");
}

// Found by tests/fuzz/scenario_parser_fuzz.cpp: a name holding a NUL cut
// the message short.
TEST(ScenarioParser, BadNamesAreShownWithUnprintableBytesEscaped) {
  EXPECT_EQ(error_of(replace(minimal, "name: stream/side_sum_race", "name: \"stream/a\\0b\\x01\"")),
            "scenarios/stream/side_sum_race.yaml:1:7: 'stream/a\\x00b\\x01' is not a valid scenario "
            "name; use AREA/NAME with letters, digits, '_', '-' and '.'");
}

TEST(ScenarioParser, UnknownStreamListsTheDeclaredOnes) {
  EXPECT_EQ(error_of(replace(minimal, "stream: side, in:", "stream: sid, in:")),
            "scenarios/stream/side_sum_race.yaml:16:46: unknown stream 'sid' in 'stream' of "
            "launch at line 16 (kernel reduce_sum); did you mean 'side'? declared: default, "
            "per_thread, side");
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
            "'previous' of item 1 of 'diagnostics' of 'expect' of scenario; did you mean 'fill'? "
            "labels: fill, sum, q, r");
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

TEST(ScenarioParser, NameMustMatchTheFileInACorpus) {
  EXPECT_EQ(error_of(minimal, in_corpus("scenarios/stream/other.yaml")),
            "scenarios/stream/other.yaml:1:7: scenario name 'stream/side_sum_race' does not match "
            "its file; expected 'stream/other', the file's path below the corpus root " +
                resolved("scenarios").generic_string() + " (given with --strict), without .yaml");
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


// ---- two levels (Note [Two levels] in harness/scenario_place.h) ----

// A stranger's scenario: no rules, no twin, its own name, [] for none.
constexpr std::string_view standalone_race = R"(name: my_race
streams:
  - {name: side, flags: non_blocking}
buffers:
  - {name: A, kind: device, size: 4, fill: 0}
operations:
  - {op: launch, kernel: fill, stream: default, out: A, value: 1, label: fill}
  - {op: launch, kernel: scale, stream: side, data: A, factor: 2, label: scale}
expect:
  diagnostics:
    - {kind: stream-race, hazard: write-after-write, buffer: A, current: scale, previous: fill}
)";

TEST(ScenarioLevels, StandaloneScenarioNeedsNoRulesNoTwinAndAnyName) {
  const scenario s = parse_scenario(standalone_race, standalone_place("ux/x.yaml"));
  EXPECT_EQ(s.level, scenario_level::standalone);
  EXPECT_EQ(s.name, "my_race");
  EXPECT_TRUE(s.rules.empty());
  EXPECT_TRUE(s.twin.empty());
  EXPECT_TRUE(s.expects_diagnostics());
}

TEST(ScenarioLevels, TheSameFileInACorpusIsHeldToTheCorpusRules) {
  EXPECT_EQ(error_of(standalone_race, in_corpus("scenarios/my_race.yaml")),
            "scenarios/my_race.yaml:1:1: missing required key 'rules' in scenario");
}

TEST(ScenarioLevels, EmptyDiagnosticsListMeansNoneOutsideACorpus) {
  const std::string text = replace(replace(standalone_race, race_expectation_of_standalone(), ""),
                                   "expect:\n", "expect:\n  diagnostics: []\n");
  const scenario s = parse_scenario(text, standalone_place("my_race.yaml"));
  EXPECT_FALSE(s.expects_diagnostics());
  EXPECT_EQ(error_of(replace(minimal, race_expectation, "  diagnostics: []\n")),
            "scenarios/stream/side_sum_race.yaml:20:16: expected 'none' rather than an empty "
            "list for 'diagnostics' of 'expect' of scenario (a corpus scenario spells no "
            "diagnostics as 'none')");
}

TEST(ScenarioLevels, StandaloneRulesMayCiteTheirOwnIdsWithoutText) {
  const std::string text = replace(standalone_race, "streams:",
                                   "rules:\n  - {id: MYLIB-7}\n  - {id: S-STREAM-2}\nstreams:");
  const scenario s = parse_scenario(text, standalone_place("my_race.yaml"));
  ASSERT_EQ(s.rules.size(), 2u);
  EXPECT_EQ(s.rules[0].id, "MYLIB-7");
  EXPECT_EQ(s.rules[0].text, "");
}

TEST(ScenarioLevels, AnSIdIsOneOfOursAtBothLevels) {
  const std::string text =
      replace(standalone_race, "streams:", "rules:\n  - {id: S-STREAM-10}\nstreams:");
  EXPECT_EQ(error_of(text, standalone_place("my_race.yaml")),
            "my_race.yaml:3:10: unknown rule id 'S-STREAM-10'; expected an S-... id of "
            "semantics.md");
}

TEST(ScenarioLevels, ACorpusQuotesItsRulesWordForWord) {
  EXPECT_EQ(error_of(replace(minimal, "may run concurrently", "can run at once")),
            "scenarios/stream/side_sum_race.yaml:5:11: the text quoted for S-STREAM-2 is not "
            "the rule's own words (a corpus scenario quotes its rules word for word); "
            "S-STREAM-2 says: \"" + std::string(rule_text("S-STREAM-2")) + "\"");
}

TEST(ScenarioLevels, EveryOtherCheckHoldsAtBothLevels) {
  EXPECT_EQ(error_of(replace(standalone_race, "stream: side, data", "stream: sid, data"),
                     standalone_place("my_race.yaml")),
            "my_race.yaml:8:41: unknown stream 'sid' in 'stream' of launch at line 8 (kernel "
            "scale); did you mean 'side'? declared: default, per_thread, side");
}

// ---- suggestions (Note [Suggesting a name] in harness/nearest_name.h) ----

std::string with_operation(std::string_view op) {
  return replace(minimal, "  - {op: query, stream: side, label: q}\n",
                 "  - {op: query, stream: side, label: q}\n" + std::string(op));
}

TEST(ScenarioSuggestions, CopyIsMemcpy) {
  EXPECT_EQ(error_of(with_operation("  - {op: copy, dst: A, src: A}\n")),
            "scenarios/stream/side_sum_race.yaml:18:10: unknown operation 'copy'; did you mean "
            "'memcpy'? (expected one of: launch, memcpy, memset, record, wait, wait_stream, "
            "synchronize, query, elapsed_time, destroy, alloc, free, record_stream, empty_cache, "
            "memory_fraction, reset_peak_stats, memory_stats, host_write, host_read, host_func, "
            "capture_begin, capture_end, graph_launch, device_guard, stream_guard, set_device, "
            "nvtx_push, nvtx_pop, nvtx_mark, sync_debug_mode); a kernel runs as 'op: launch, "
            "kernel: copy'");
}

TEST(ScenarioSuggestions, CudaNamesAndOtherSpellingsOfAnOperation) {
  for (const auto& [typed, meant] : std::vector<std::pair<std::string, std::string>>{
           {"cudaMemcpyAsync", "memcpy"}, {"cudaStreamWaitEvent", "wait"},
           {"waitStream", "wait_stream"}, {"sycnhronize", "synchronize"},
           {"cudaEventRecord", "record"}, {"malloc", "alloc"}}) {
    EXPECT_THAT(error_of(with_operation("  - {op: " + typed + "}\n")),
                testing::HasSubstr("unknown operation '" + typed + "'; did you mean '" + meant +
                                   "'? (expected one of: "))
        << typed;
  }
}

TEST(ScenarioSuggestions, BufferIsSrcForAHostRead) {
  EXPECT_EQ(error_of(with_operation("  - {op: host_read, buffer: A}\n")),
            "scenarios/stream/side_sum_race.yaml:18:21: unknown key 'buffer' in host_read at "
            "line 18; did you mean 'src'? (expected op, label or src)");
}

TEST(ScenarioSuggestions, BufferIsDstOrSrcForAMemcpy) {
  EXPECT_EQ(error_of(with_operation("  - {op: memcpy, buffer: A}\n")),
            "scenarios/stream/side_sum_race.yaml:18:18: unknown key 'buffer' in memcpy at line "
            "18; did you mean 'dst' or 'src'? (expected op, label, dst, src, async or stream)");
}

TEST(ScenarioSuggestions, AKeyAlreadyGivenIsNotSuggested) {
  EXPECT_EQ(error_of(with_operation("  - {op: memcpy, dst: A, buffer: A}\n")),
            "scenarios/stream/side_sum_race.yaml:18:26: unknown key 'buffer' in memcpy at line "
            "18; did you mean 'src'? (expected op, label, dst, src, async or stream)");
}

TEST(ScenarioSuggestions, KernelParametersAndChoices) {
  EXPECT_EQ(error_of(replace(minimal, "kernel: fill, stream: default, out: A",
                             "kernel: fill, stream: default, output: A")),
            "scenarios/stream/side_sum_race.yaml:15:49: unknown key 'output' in launch at line 15 "
            "(kernel fill); did you mean 'out'? (expected op, label, kernel, stream, out or value)");
  EXPECT_EQ(error_of(replace(minimal, "flags: non_blocking", "flags: nonblocking")),
            "scenarios/stream/side_sum_race.yaml:8:25: expected blocking or non_blocking for "
            "'flags' of item 1 of 'streams' of scenario, got 'nonblocking'; did you mean "
            "'non_blocking'?");
  EXPECT_EQ(error_of(replace(minimal, "hazard: read-after-write", "hazard: RAW")),
            "scenarios/stream/side_sum_race.yaml:21:35: expected read-after-write, "
            "write-after-read or write-after-write for 'hazard' of item 1 of 'diagnostics' of "
            "'expect' of scenario, got 'RAW'; did you mean 'read-after-write'?");
  EXPECT_EQ(error_of(replace(minimal, "kernel: reduce_sum", "kernel: sum")),
            "scenarios/stream/side_sum_race.yaml:16:26: unknown kernel 'sum'; did you mean "
            "'reduce_sum'? (expected fill, copy, scale, axpy, reduce_sum or spin)");
}

TEST(ScenarioSuggestions, TopLevelKeys) {
  EXPECT_EQ(error_of(replace(minimal, "expect:\n", "expected:\n")),
            "scenarios/stream/side_sum_race.yaml:19:1: unknown key 'expected' in scenario; did "
            "you mean 'expect'? (expected name, description, rules, twin, requires, "
            "launch_blocking, streams, events, buffers, operations or expect)");
}

TEST(ScenarioSuggestions, NoSuggestionForAWordFarFromEveryName) {
  EXPECT_EQ(error_of(with_operation("  - {op: teleport}\n")),
            "scenarios/stream/side_sum_race.yaml:18:10: unknown operation 'teleport'; expected one "
            "of: launch, memcpy, memset, record, wait, wait_stream, synchronize, query, "
            "elapsed_time, destroy, alloc, free, record_stream, empty_cache, memory_fraction, "
            "reset_peak_stats, memory_stats, host_write, host_read, host_func, capture_begin, "
            "capture_end, graph_launch, device_guard, stream_guard, set_device, nvtx_push, "
            "nvtx_pop, nvtx_mark, sync_debug_mode");
}

}  // namespace
}  // namespace streamsan::harness
