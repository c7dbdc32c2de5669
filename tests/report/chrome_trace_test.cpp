#include "sanitizer/report/chrome_trace.h"

#include <gtest/gtest.h>

#include <set>

#include "tests/report/report_fixture.h"
#include "tests/report/timeline_fixture.h"

namespace streamsan {
namespace {

using json = nlohmann::ordered_json;

json trace_of(const std::vector<diagnostic>& diagnostics) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  return chrome_trace({.diagnostics = diagnostics, .tables = tables}, symbols,
                      {.source_root = "/src/demo"});
}

TEST(ChromeTrace, OneProcessPerRaceAThreadPerLaneASlicePerOperation) {
  auto d = testing::race_with_timeline(testing::stream_race_diagnostic());
  d.id = 4;
  const auto trace = trace_of({d, testing::every_kind_diagnostics()[6]});  // + a sync error
  const auto& events = trace.at("traceEvents");
  std::set<std::string> lanes;
  int slices = 0, flow_starts = 0, flow_ends = 0;
  for (const auto& e : events) {
    EXPECT_EQ(e.at("pid"), 1);
    const auto ph = e.at("ph").get<std::string>();
    if (ph == "M" && e.at("name") == "thread_name") lanes.insert(e.at("args").at("name"));
    if (ph == "M" && e.at("name") == "process_name") {
      EXPECT_EQ(e.at("args").at("name"),
                "#4 stream-race (read-after-write) on alloc#3 'A' (device memory, 4096 bytes)");
    }
    if (ph == "X") {
      ++slices;
      EXPECT_EQ(e.at("ts").get<int>() % 10, 0);
      EXPECT_EQ(e.at("dur"), 8);
    }
    if (ph == "s") ++flow_starts;
    if (ph == "f") {
      ++flow_ends;
      EXPECT_EQ(e.at("bp"), "e");
    }
  }
  EXPECT_EQ(lanes, (std::set<std::string>{"thread#1", "stream#1", "stream#2", "stream#3"}));
  EXPECT_EQ(slices, 5);
  EXPECT_EQ(flow_starts, 3);  // two edges and the missing one
  EXPECT_EQ(flow_ends, 3);
  EXPECT_EQ(trace.at("otherData").at("races").size(), 1u);
}

TEST(ChromeTrace, TheConflictingPairIsMarkedAndCarriesStacks) {
  const auto trace = trace_of({testing::race_with_timeline(testing::stream_race_diagnostic())});
  int marked = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    if (e.contains("cname")) {
      ++marked;
      EXPECT_TRUE(e.at("args").contains("conflict"));
    }
    EXPECT_TRUE(e.at("args").at("stack").is_array());
  }
  EXPECT_EQ(marked, 2);
  bool missing = false;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "s" && e.at("name") == "missing order") missing = true;
  }
  EXPECT_TRUE(missing);
}

TEST(ChromeTrace, CandidatesAreCountedNotDrawn) {
  auto candidate = testing::race_with_timeline(testing::inferred_candidate());
  auto confirmed = testing::race_with_timeline(testing::stream_race_diagnostic());
  const auto trace = trace_of({candidate, confirmed});
  const auto& other = trace.at("otherData");
  EXPECT_EQ(other.at("warnings"), 1);
  EXPECT_EQ(other.at("possible_races"), 1);
  EXPECT_EQ(other.at("races").size(), 1u);
}

TEST(ChromeTrace, WithoutTimelinesIsStillAValidTrace) {
  const auto trace = trace_of(testing::every_kind_diagnostics());
  EXPECT_TRUE(trace.at("traceEvents").empty());
  EXPECT_EQ(trace.at("otherData").at("warnings"), 12);
}

}  // namespace
}  // namespace streamsan
