#include "sanitizer/report/json_report.h"

#include <gtest/gtest.h>

#include "tests/report/report_fixture.h"
#include "tests/report/timeline_fixture.h"

namespace streamsan {
namespace {

using json = nlohmann::ordered_json;

json report_of(const std::vector<diagnostic>& diagnostics, const log_tables& tables,
               const call_counts* unmodelled = nullptr, std::uint64_t suppressed = 0) {
  symbolizer symbols(tables, symbol_source::log_only);
  return json_report({.diagnostics = diagnostics,
                      .tables = tables,
                      .unmodelled_calls = unmodelled,
                      .records_processed = 1234,
                      .suppressed = suppressed},
                     symbols, {.source_root = "/src/demo"});
}

// Note [Reports of several processes]: "process" is null for the program
// `streamsan run` started, its pid and command line for any other.
TEST(JsonReport, ProcessIsNamedOnlyWhenTheReportNamesIt) {
  const auto tables = testing::report_tables();
  EXPECT_TRUE(report_of({}, tables).at("process").is_null());
  symbolizer symbols(tables, symbol_source::log_only);
  report_options options;
  options.process = process_name{4242, "python3 train.py"};
  const auto report = json_report({.diagnostics = {}, .tables = tables}, symbols, options);
  EXPECT_EQ(report.at("process").at("pid"), 4242);
  EXPECT_EQ(report.at("process").at("command"), "python3 train.py");
}

TEST(JsonReport, StreamRaceHasEveryPart) {
  const auto tables = testing::report_tables();
  const auto report = report_of({testing::stream_race_diagnostic()}, tables);
  ASSERT_EQ(report.at("diagnostics").size(), 1u);
  const auto& d = report.at("diagnostics")[0];
  EXPECT_EQ(d.at("kind"), "stream-race");
  EXPECT_EQ(d.at("category"), "race");
  EXPECT_EQ(d.at("hazard"), "read-after-write");
  EXPECT_EQ(d.at("count"), 3);
  EXPECT_EQ(d.at("message"),
            "stream-race (read-after-write) on alloc#3 'A' (device memory, 4096 bytes)");
  const auto& current = d.at("current");
  EXPECT_EQ(current.at("operation"), "kernel");
  EXPECT_EQ(current.at("context"), "stream");
  EXPECT_EQ(current.at("stream"), 2);
  EXPECT_EQ(current.at("thread"), 1);
  EXPECT_EQ(current.at("name"), "sum");
  EXPECT_EQ(current.at("mode"), "read");
  EXPECT_EQ(current.at("size"), 4096);
  EXPECT_EQ(current.at("nvtx_range"), "forward/attention");
  EXPECT_EQ(current.at("stack"), json::parse(R"json([
      {"address":"0x1100","function":"launch_sum(float const*)","file":"demo.cpp","line":42,
       "module":"/src/demo/demo","module_offset":"0x1100","kind":"user"},
      {"address":"0x2000","function":"main","file":"demo.cpp","line":60,
       "module":"/src/demo/demo","module_offset":"0x2000","kind":"user"}])json"));
  EXPECT_EQ(d.at("previous").at("name"), "fill");
  EXPECT_EQ(d.at("previous").at("mode"), "write");
  EXPECT_EQ(d.at("allocation").at("id"), 3);
  EXPECT_EQ(d.at("allocation").at("label"), "A");
  EXPECT_EQ(d.at("allocation").at("memory"), "device");
  EXPECT_EQ(d.at("allocation").at("address"), "0x7f0000000000");
  EXPECT_EQ(d.at("allocation").at("site")[0].at("function"), "make_buffers()");
  EXPECT_EQ(d.at("certainty"), "confirmed");
  EXPECT_EQ(current.at("origin"), "exact");
  EXPECT_EQ(d.at("overlap"), json::parse(R"({"offset":0,"size":4096,
      "ranges":[{"offset":0,"size":4096}],"range_count":1,"bytes":4096})"));
  EXPECT_EQ(d.at("event"), nullptr);
}

TEST(JsonReport, SummaryCountsKindsOccurrencesAndUnmodelledCalls) {
  const auto tables = testing::report_tables();
  const auto unmodelled = testing::sample_unmodelled_calls();
  const auto all = testing::every_kind_diagnostics();
  const auto report = report_of(all, tables, &unmodelled, 5);
  const auto& summary = report.at("summary");
  EXPECT_EQ(summary.at("warnings"), all.size());
  EXPECT_EQ(summary.at("occurrences"), all.size() + 2);  // the stream race was seen 3 times
  EXPECT_EQ(summary.at("suppressed"), 5);
  EXPECT_EQ(summary.at("records_processed"), 1234);
  EXPECT_EQ(summary.at("by_kind").at("stream-race"), 2);
  EXPECT_EQ(summary.at("by_kind").at("unrecorded-event"), 1);
  EXPECT_EQ(summary.at("by_kind").size(), static_cast<std::size_t>(diagnostic_kind_count));
  EXPECT_EQ(summary.at("unmodelled_calls"),
            json::parse(R"({"cuMemMap":1,"cudaMemPrefetchAsync":3})"));
}

TEST(JsonReport, SyncErrorsNameTheirObjects) {
  const auto tables = testing::report_tables();
  const auto report = report_of(testing::every_kind_diagnostics(), tables);
  const auto& unrecorded = report.at("diagnostics")[6];
  EXPECT_EQ(unrecorded.at("kind"), "unrecorded-event");
  EXPECT_EQ(unrecorded.at("category"), "sync");
  EXPECT_EQ(unrecorded.at("hazard"), nullptr);
  EXPECT_EQ(unrecorded.at("event"), 4);
  EXPECT_EQ(unrecorded.at("previous"), nullptr);
  EXPECT_EQ(unrecorded.at("allocation"), nullptr);
  EXPECT_EQ(unrecorded.at("explanation"),
            "event#4 was never recorded, so this orders nothing (S-EVENT-3).");
  EXPECT_EQ(unrecorded.at("current").at("operation"), "event wait");
}

TEST(JsonReport, GraphNodesCarryGraphAndIndex) {
  const auto tables = testing::report_tables();
  const auto report = report_of(testing::every_kind_diagnostics(), tables);
  const auto& node = report.at("diagnostics")[2].at("current");
  EXPECT_EQ(node.at("graph"), 2);
  EXPECT_EQ(node.at("graph_node"), 1);
  EXPECT_FALSE(report.at("diagnostics")[0].at("current").contains("graph"));
}

TEST(JsonReport, EmptyReportStillHasASummary) {
  const auto tables = testing::report_tables();
  const auto report = report_of({}, tables);
  EXPECT_TRUE(report.at("diagnostics").empty());
  EXPECT_EQ(report.at("summary").at("warnings"), 0);
}

TEST(JsonReport, OperationsNameTheAllocationTheyAccessed) {
  const auto tables = testing::report_tables();
  auto race = testing::stream_race_diagnostic();
  race.current.alloc = alloc_id{3};
  race.previous->alloc = alloc_id{7};
  const auto report = report_of({race}, tables);
  const auto& d = report.at("diagnostics")[0];
  EXPECT_EQ(d.at("current").at("alloc"), 3);
  EXPECT_EQ(d.at("previous").at("alloc"), 7);
  EXPECT_EQ(d.at("previous").at("description"),
            "Write of 4096 bytes at offset 0 of alloc#7 by kernel 'fill' on stream#1 (thread#1)");
}

TEST(JsonReport, NamesThatAreNotUtf8AreReplacedWhenDumped) {
  auto tables = testing::report_tables();
  tables.define_string(string_id{2}, "s\xffm");  // kernel 'sum' from a corrupt trace
  const auto report = report_of({testing::stream_race_diagnostic()}, tables);
  const auto text = report.dump(-1, ' ', false, json::error_handler_t::replace);
  EXPECT_EQ(json::parse(text).at("diagnostics")[0].at("current").at("name"), "s\xEF\xBF\xBDm");
}

TEST(JsonReport, MeasuredAtomicRaceCarriesModesOriginsAndRanges) {
  const auto tables = testing::report_tables();
  const auto report = report_of({testing::measured_atomic_race()}, tables);
  const auto& d = report.at("diagnostics")[0];
  EXPECT_EQ(d.at("certainty"), "confirmed");
  EXPECT_EQ(d.at("current").at("mode"), "atomic");
  EXPECT_EQ(d.at("current").at("origin"), "measured");
  EXPECT_EQ(d.at("previous").at("mode"), "write");
  EXPECT_EQ(d.at("previous").at("origin"), "exact");
  EXPECT_EQ(d.at("overlap"), json::parse(R"({"offset":16,"size":16,
      "ranges":[{"offset":16,"size":4},{"offset":28,"size":4}],"range_count":2,"bytes":8})"));
  EXPECT_EQ(d.at("current").at("description"),
            "Atomic access of 20 bytes at offset 16 (measured footprint) by kernel 'sum' on "
            "stream#2 (thread#1)");
}

TEST(JsonReport, CandidatesArePossibleRacesNotDiagnostics) {
  const auto tables = testing::report_tables();
  const auto report =
      report_of({testing::inferred_candidate(), testing::stream_race_diagnostic(),
                 testing::half_measured_candidate()},
                tables);
  ASSERT_EQ(report.at("diagnostics").size(), 1u);
  EXPECT_EQ(report.at("diagnostics")[0].at("certainty"), "confirmed");
  const auto& possible = report.at("possible_races");
  ASSERT_EQ(possible.size(), 2u);
  EXPECT_EQ(possible[0].at("certainty"), "candidate");
  EXPECT_EQ(possible[0].at("count"), 3);
  EXPECT_EQ(possible[0].at("current").at("origin"), "inferred");
  EXPECT_EQ(possible[0].at("previous").at("origin"), "inferred");
  EXPECT_EQ(possible[1].at("current").at("origin"), "measured");
  EXPECT_EQ(possible[1].at("overlap").at("ranges").size(), 2u);
  EXPECT_EQ(possible[1].at("overlap").at("range_count"), 12);
  EXPECT_EQ(possible[1].at("overlap").at("bytes"), 192);
  const auto& summary = report.at("summary");
  EXPECT_EQ(summary.at("warnings"), 1);
  EXPECT_EQ(summary.at("occurrences"), 3);
  EXPECT_EQ(summary.at("possible_races"), 2);
  EXPECT_EQ(summary.at("by_kind"), json::parse(R"({"stream-race":1})"));
}

}  // namespace
}  // namespace streamsan

namespace streamsan {
namespace {

TEST(JsonReportExplains, CauseLinksGraphFixAndTimeline) {
  const auto tables = testing::report_tables();
  auto race = testing::race_with_timeline(testing::stream_race_diagnostic());
  race.id = 2;
  ordering_cause c;
  c.kind = cause_kind::unrecorded_event;
  c.event = event_id{4};
  c.call.op = operation_kind::event_wait;
  c.call.stream = stream_id{2};
  c.call.stack = stack_id{6};
  c.reported_as = 1;
  race.cause = c;
  auto wait = testing::every_kind_diagnostics()[6];
  wait.id = 1;
  wait.failed_to_prevent = {2};
  symbolizer symbols(tables, symbol_source::log_only);
  const std::vector<diagnostic> diagnostics{wait, race};
  const auto j = json_report({.diagnostics = diagnostics, .tables = tables}, symbols,
                             {.source_root = "/src/demo"});
  const auto& w = j.at("diagnostics")[0];
  const auto& r = j.at("diagnostics")[1];
  EXPECT_EQ(w.at("id"), 1);
  EXPECT_EQ(w.at("failed_to_prevent"), json::parse("[2]"));
  EXPECT_EQ(r.at("cause").at("kind"), "unrecorded-event");
  EXPECT_EQ(r.at("cause").at("reported_as"), 1);
  EXPECT_EQ(r.at("cause").at("call").at("operation"), "event wait");
  EXPECT_EQ(r.at("cause").at("message"),
            "stream#2 waited for event#4, which was never recorded, so the wait ordered nothing "
            "(S-EVENT-3)");
  EXPECT_EQ(r.at("fix"), "record event#4 after fill: `cudaEventRecord(event#4, stream#1)` before "
                         "the wait");
  EXPECT_TRUE(r.at("graph").is_null());
  const auto& t = r.at("timeline");
  EXPECT_EQ(t.at("ops").size(), 5u);
  EXPECT_EQ(t.at("ops")[2].at("lane"), "stream#3");
  EXPECT_EQ(t.at("edges")[1], json::parse(R"({"from":2,"to":3,"kind":"event"})"));
  EXPECT_EQ(t.at("missing_edge"), json::parse(R"({"from":1,"to":4})"));
  EXPECT_TRUE(w.at("timeline").is_null());
}

TEST(JsonReportExplains, GraphNodeRaceNamesTheMissingEdge) {
  const auto tables = testing::report_tables();
  auto d = testing::every_kind_diagnostics()[2];
  graph_gap gap;
  gap.node_count = 4;
  gap.current_depends_on = {{3, string_id{7}}};
  d.graph = gap;
  symbolizer symbols(tables, symbol_source::log_only);
  const std::vector<diagnostic> diagnostics{d};
  const auto j = json_report({.diagnostics = diagnostics, .tables = tables}, symbols, {});
  const auto& g = j.at("diagnostics")[0].at("graph");
  EXPECT_EQ(g.at("missing_edge"), json::parse(R"({"from":0,"to":1})"));
  EXPECT_EQ(g.at("node_count"), 4);
  EXPECT_EQ(g.at("current_depends_on"), json::parse(R"([{"node":3,"name":"node_a"}])"));
  EXPECT_TRUE(g.at("previous_depends_on").empty());
}

}  // namespace
}  // namespace streamsan
