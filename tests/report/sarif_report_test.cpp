// The SARIF has the properties GitHub code scanning requires (SARIF 2.1.0,
// tool.driver.name and rules, results with ruleId / message.text /
// physicalLocation with artifactLocation.uri and region.startLine) and the
// rule indices and ids agree.
#include "sanitizer/report/sarif_report.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/report/report_fixture.h"

namespace streamsan {
namespace {

using json = nlohmann::ordered_json;

json sarif_of(const std::vector<diagnostic>& diagnostics, const log_tables& tables,
              std::filesystem::path root = "/src/demo") {
  symbolizer symbols(tables, symbol_source::log_only);
  return sarif_report({.diagnostics = diagnostics, .tables = tables}, symbols,
                      {.source_root = std::move(root)});
}

const json& only_result(const json& sarif) {
  const auto& results = sarif.at("runs").at(0).at("results");
  EXPECT_EQ(results.size(), 1u);
  return results.at(0);
}

TEST(SarifReport, HasTheRequiredTopLevelShape) {
  const auto tables = testing::report_tables();
  const auto sarif = sarif_of(testing::every_kind_diagnostics(), tables);
  EXPECT_EQ(sarif.at("version"), "2.1.0");
  EXPECT_EQ(sarif.at("$schema"), "https://json.schemastore.org/sarif-2.1.0.json");
  ASSERT_EQ(sarif.at("runs").size(), 1u);
  const auto& driver = sarif.at("runs")[0].at("tool").at("driver");
  EXPECT_EQ(driver.at("name"), "streamsan");
  EXPECT_FALSE(driver.contains("informationUri"));  // optional; none invented
  const auto& rules = driver.at("rules");
  ASSERT_EQ(rules.size(), static_cast<std::size_t>(diagnostic_kind_count));
  std::set<std::string> ids;
  for (int i = 0; i < diagnostic_kind_count; ++i) {
    const auto& rule = rules[static_cast<std::size_t>(i)];
    EXPECT_EQ(rule.at("id"), to_string(static_cast<diagnostic_kind>(i)));
    ids.insert(rule.at("id").get<std::string>());
    for (const char* text : {"shortDescription", "fullDescription", "help"}) {
      EXPECT_FALSE(rule.at(text).at("text").get<std::string>().empty()) << rule.at("id") << text;
    }
    const auto level = rule.at("defaultConfiguration").at("level").get<std::string>();
    EXPECT_TRUE(level == "error" || level == "warning") << level;
  }
  EXPECT_EQ(ids.size(), rules.size());
}

// Note [Reports of several processes]: a named process is the invocation's
// processId and commandLine; the started program's invocation has neither.
TEST(SarifReport, ANamedProcessIsTheInvocations) {
  const auto tables = testing::report_tables();
  EXPECT_FALSE(sarif_of({}, tables).at("runs").at(0).at("invocations").at(0).contains("processId"));
  symbolizer symbols(tables, symbol_source::log_only);
  report_options options;
  options.process = process_name{4242, "python3 train.py"};
  const auto sarif = sarif_report({.diagnostics = {}, .tables = tables}, symbols, options);
  const auto& invocation = sarif.at("runs").at(0).at("invocations").at(0);
  EXPECT_EQ(invocation.at("processId"), 4242);
  EXPECT_EQ(invocation.at("commandLine"), "python3 train.py");
}

TEST(SarifReport, EveryResultNamesAnExistingRuleConsistently) {
  const auto tables = testing::report_tables();
  const auto all = testing::every_kind_diagnostics();
  const auto sarif = sarif_of(all, tables);
  const auto& run = sarif.at("runs")[0];
  const auto& rules = run.at("tool").at("driver").at("rules");
  const auto& results = run.at("results");
  ASSERT_EQ(results.size(), all.size());
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& result = results[i];
    const auto index = result.at("ruleIndex").get<std::size_t>();
    ASSERT_LT(index, rules.size());
    EXPECT_EQ(result.at("ruleId"), rules[index].at("id"));
    EXPECT_EQ(result.at("ruleId"), to_string(all[i].kind));
    EXPECT_EQ(result.at("level"), rules[index].at("defaultConfiguration").at("level"));
    EXPECT_FALSE(result.at("message").at("text").get<std::string>().empty());
    EXPECT_EQ(result.at("partialFingerprints").at("streamsanCallSites/v1").get<std::string>().size(),
              16u);
    if (result.contains("locations")) {
      for (const auto& location : result.at("locations")) {
        const auto& physical = location.at("physicalLocation");
        EXPECT_FALSE(physical.at("artifactLocation").at("uri").get<std::string>().empty());
        EXPECT_GE(physical.at("region").at("startLine").get<int>(), 1);
      }
    }
  }
}

TEST(SarifReport, StreamRaceIsLocatedAtTheCurrentCallSiteWithRelatedLocations) {
  const auto tables = testing::report_tables();
  const auto sarif = sarif_of({testing::stream_race_diagnostic()}, tables);
  EXPECT_EQ(sarif.at("runs")[0].at("originalUriBaseIds"),
            json::parse(R"({"%SRCROOT%":{"uri":"file:///src/demo/"}})"));
  const auto& result = only_result(sarif);
  EXPECT_EQ(result.at("message").at("text"),
            "stream-race (read-after-write) on alloc#3 'A' (device memory, 4096 bytes). Read of "
            "4096 bytes at offset 0 by kernel 'sum' on stream#2 (thread#1) in range "
            "forward/attention. Previous write of 4096 bytes at offset 0 by kernel 'fill' on "
            "stream#1 (thread#1). Fix: make stream#2 wait for fill: `cudaEventRecord(e, "
            "stream#1)` after it, `cudaStreamWaitEvent(stream#2, e)` before sum.");
  EXPECT_EQ(result.at("properties").at("fix"),
            "make stream#2 wait for fill: `cudaEventRecord(e, stream#1)` after it, "
            "`cudaStreamWaitEvent(stream#2, e)` before sum");
  EXPECT_EQ(result.at("locations")[0].at("physicalLocation"),
            json::parse(R"({"artifactLocation":{"uri":"demo.cpp","uriBaseId":"%SRCROOT%"},
                            "region":{"startLine":42}})"));
  const auto& related = result.at("relatedLocations");
  ASSERT_EQ(related.size(), 2u);
  EXPECT_EQ(related[0].at("id"), 1);
  EXPECT_EQ(related[0].at("physicalLocation").at("region").at("startLine"), 40);
  EXPECT_EQ(related[0].at("message").at("text"),
            "Previous write of 4096 bytes at offset 0 by kernel 'fill' on stream#1 (thread#1)");
  EXPECT_EQ(related[1].at("id"), 2);
  EXPECT_EQ(related[1].at("physicalLocation").at("region").at("startLine"), 30);
  EXPECT_EQ(result.at("occurrenceCount"), 3);
  const auto& frames = result.at("stacks")[0].at("frames");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].at("location").at("logicalLocations")[0].at("fullyQualifiedName"),
            "launch_sum(float const*)");
}

TEST(SarifReport, ACandidateIsANoteWithItsCertaintyInThePropertyBag) {
  const auto tables = testing::report_tables();
  const auto candidate = testing::half_measured_candidate();
  const auto sarif = sarif_of({candidate}, tables);
  const auto& result = only_result(sarif);
  EXPECT_EQ(result.at("level"), "note");
  EXPECT_EQ(result.at("ruleId"), "stream-race");
  EXPECT_EQ(result.at("message").at("text").get<std::string>().rfind(
                "Possible stream-race (read-after-write) on alloc#5 'B' (device memory, 4096 "
                "bytes) (guessed footprint, not confirmed by a measurement; rerun with "
                "--precise). Read of 4096 bytes at offset 0 (measured footprint) by kernel 'sum'",
                0),
            0u)
      << result.at("message");
  auto properties = result.at("properties");
  EXPECT_TRUE(properties.contains("fix"));  // the fix hint shares the bag
  properties.erase("fix");
  EXPECT_EQ(properties, json::parse(R"({
      "certainty":"candidate",
      "current":{"mode":"read","origin":"measured"},
      "previous":{"mode":"read-write","origin":"inferred"},
      "conflict":{"offset":0,"size":1024,
                  "ranges":[{"offset":0,"size":16},{"offset":64,"size":16}],
                  "rangeCount":12,"bytes":192}})"));
  // Confirmed later, the same call sites keep their fingerprint.
  auto confirmed = candidate;
  confirmed.certainty = diagnostic_certainty::confirmed;
  const auto later_sarif = sarif_of({confirmed}, tables);
  const auto& later = only_result(later_sarif);
  EXPECT_EQ(later.at("level"), "error");
  EXPECT_EQ(later.at("partialFingerprints"), result.at("partialFingerprints"));
}

TEST(SarifReport, ConfirmedResultsCarryModesOriginsAndRanges) {
  const auto tables = testing::report_tables();
  const auto sarif = sarif_of({testing::measured_atomic_race()}, tables);
  const auto& result = only_result(sarif);
  EXPECT_EQ(result.at("level"), "error");
  EXPECT_EQ(result.at("properties").at("certainty"), "confirmed");
  EXPECT_EQ(result.at("properties").at("current"),
            json::parse(R"({"mode":"atomic","origin":"measured"})"));
  EXPECT_EQ(result.at("properties").at("conflict").at("rangeCount"), 2);
  const auto sync = testing::every_kind_diagnostics()[6];  // unrecorded-event: no bytes
  const auto sync_sarif = sarif_of({sync}, tables);
  const auto& sync_result = only_result(sync_sarif);
  EXPECT_EQ(sync_result.at("level"), "warning");
  EXPECT_FALSE(sync_result.at("properties").contains("conflict"));
  EXPECT_FALSE(sync_result.at("properties").contains("previous"));
}

TEST(SarifReport, PathsOutsideTheRootBecomeFileUris) {
  const auto tables = testing::report_tables();
  const auto sarif = sarif_of({testing::stream_race_diagnostic()}, tables, "/elsewhere");
  EXPECT_EQ(only_result(sarif).at("locations")[0].at("physicalLocation").at("artifactLocation"),
            json::parse(R"({"uri":"file:///src/demo/demo.cpp"})"));
  const auto no_root = sarif_of({testing::stream_race_diagnostic()}, tables, "");
  EXPECT_FALSE(no_root.at("runs")[0].contains("originalUriBaseIds"));
}

TEST(SarifReport, UrisArePercentEncoded) {
  auto tables = testing::report_tables();
  tables.define_symbol(0x1100, {"launch_sum", "/src/demo/my file#1.cpp", 7, "", 0});
  const auto sarif = sarif_of({testing::stream_race_diagnostic()}, tables);
  EXPECT_EQ(only_result(sarif).at("locations")[0].at("physicalLocation").at("artifactLocation").at("uri"),
            "my%20file%231.cpp");
}

TEST(SarifReport, ResultsWithoutSourceHaveNoLocation) {
  const auto tables = testing::report_tables();
  const auto all = testing::every_kind_diagnostics();
  const auto sarif = sarif_of({all.back()}, tables);  // no stacks at all
  const auto& result = only_result(sarif);
  EXPECT_FALSE(result.contains("locations"));
  EXPECT_FALSE(result.contains("relatedLocations"));
  EXPECT_EQ(result.at("ruleId"), "stream-race");
}

std::string fingerprint_of(const diagnostic& d, const log_tables& tables) {
  return only_result(sarif_of({d}, tables)).at("partialFingerprints").at("streamsanCallSites/v1");
}

TEST(SarifReport, FingerprintsFollowKindAndCallSitesNotAddresses) {
  const auto tables = testing::report_tables();
  const auto race = testing::stream_race_diagnostic();
  const auto base = fingerprint_of(race, tables);
  EXPECT_EQ(fingerprint_of(race, tables), base);

  // The same code loaded elsewhere (ASLR): other addresses, same symbols.
  log_tables moved = testing::report_tables();
  const std::array<std::uint64_t, 2> sum = {0x91100, 0x92000};
  const std::array<std::uint64_t, 2> fill = {0x91000, 0x92000};
  moved.define_stack(stack_id{2}, sum);
  moved.define_stack(stack_id{1}, fill);
  moved.define_symbol(0x91100, *tables.symbol(0x1100));
  moved.define_symbol(0x91000, *tables.symbol(0x1000));
  moved.define_symbol(0x92000, *tables.symbol(0x2000));
  EXPECT_EQ(fingerprint_of(race, moved), base);

  auto other_kind = race;
  other_kind.kind = diagnostic_kind::host_device_race;
  EXPECT_NE(fingerprint_of(other_kind, tables), base);

  log_tables edited = testing::report_tables();
  edited.define_symbol(0x1100, {"launch_sum(float const*)", "/src/demo/demo.cpp", 43, "", 0});
  EXPECT_NE(fingerprint_of(race, edited), base);

  auto swapped = race;
  std::swap(swapped.current, *swapped.previous);
  EXPECT_NE(fingerprint_of(swapped, tables), base);
}

}  // namespace
}  // namespace streamsan

namespace streamsan {
namespace {

// What the run did not check reaches a SARIF viewer as the invocation's
// notifications, from the same counts the text summary prints.
TEST(SarifReport, WhatWasNotCheckedBecomesInvocationNotifications) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  const call_counts unmodelled{{"cuMemcpy3DBatchAsync", 2}};
  const auto sarif = sarif_report({.diagnostics = {},
                                   .tables = tables,
                                   .unmodelled_calls = &unmodelled,
                                   .device_synchronized_conflicts = 0,
                                   .host_ordered_conflicts = 7},
                                  symbols, {});
  const auto& invocation = sarif.at("runs")[0].at("invocations").at(0);
  EXPECT_EQ(invocation.at("executionSuccessful"), true);
  const auto& notes = invocation.at("toolExecutionNotifications");
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].at("descriptor").at("id"), "unmodelled-call");
  EXPECT_EQ(notes[0].at("level"), "warning");
  EXPECT_NE(notes[0].at("message").at("text").get<std::string>().find(
                "cuMemcpy3DBatchAsync was called 2 times"),
            std::string::npos);
  EXPECT_EQ(notes[1].at("descriptor").at("id"), "host-ordered-conflicts");
  EXPECT_EQ(notes[1].at("level"), "note");
  EXPECT_EQ(notes[1].at("message").at("text").get<std::string>().rfind("7 conflicts not checked", 0),
            0u);
}

TEST(SarifReport, ACleanRunWithNothingUncheckedHasNoNotifications) {
  const auto tables = testing::report_tables();
  const auto sarif = sarif_of({}, tables);
  const auto& invocation = sarif.at("runs")[0].at("invocations").at(0);
  EXPECT_EQ(invocation.at("executionSuccessful"), true);
  EXPECT_FALSE(invocation.contains("toolExecutionNotifications"));
}

}  // namespace
}  // namespace streamsan
