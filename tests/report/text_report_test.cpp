#include "sanitizer/report/text_report.h"

#include <gtest/gtest.h>

#include <sstream>

#include "tests/report/golden_file.h"
#include "tests/report/report_fixture.h"

namespace streamsan {
namespace {

using testing::expect_golden;

std::string text_report(const std::vector<diagnostic>& diagnostics, const log_tables& tables,
                        report_options options = {.source_root = "/src/demo"},
                        const call_counts* unmodelled = nullptr, std::uint64_t suppressed = 0) {
  symbolizer symbols(tables, symbol_source::log_only);
  std::ostringstream out;
  print_text_report(out,
                    {.diagnostics = diagnostics,
                     .tables = tables,
                     .unmodelled_calls = unmodelled,
                     .suppressed = suppressed},
                    symbols, options);
  return out.str();
}

TEST(TextReport, StreamRaceMatchesGolden) {
  const auto tables = testing::report_tables();
  expect_golden("stream_race.txt", text_report({testing::stream_race_diagnostic()}, tables));
}

TEST(TextReport, EveryKindMatchesGolden) {
  const auto tables = testing::report_tables();
  const auto unmodelled = testing::sample_unmodelled_calls();
  expect_golden("every_kind.txt",
                text_report(testing::every_kind_diagnostics(), tables,
                            {.source_root = "/src/demo"}, &unmodelled, 2));
}

TEST(TextReport, PrintLimitSaysHowManyWereLeftOut) {
  const auto tables = testing::report_tables();
  const auto all = testing::every_kind_diagnostics();
  const auto text = text_report(all, tables, {.print_limit = 2, .source_root = "/src/demo"});
  std::size_t warnings = 0;
  for (auto at = text.find("WARNING: "); at != std::string::npos; at = text.find("WARNING: ", at + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 2u);
  const std::string tail = "streamsan: … and " + std::to_string(all.size() - 2) +
                           " more not printed\nstreamsan: reported " +
                           std::to_string(all.size()) + " warnings\n";
  ASSERT_GE(text.size(), tail.size());
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail);
}

TEST(TextReport, PrintLimitZeroPrintsOnlyTheSummary) {
  const auto tables = testing::report_tables();
  EXPECT_EQ(text_report({testing::stream_race_diagnostic()}, tables,
                        {.print_limit = 0, .source_root = {}}),
            "streamsan: … and 1 more not printed\nstreamsan: reported 1 warning\n");
}

TEST(TextReport, NoDiagnosticsIsOneLine) {
  const auto tables = testing::report_tables();
  EXPECT_EQ(text_report({}, tables), "streamsan: reported 0 warnings\n");
  EXPECT_EQ(text_report({}, tables, {}, nullptr, 4), "streamsan: reported 0 warnings, 4 suppressed\n");
}

TEST(TextReport, PathsStayAbsoluteWithoutASourceRoot) {
  const auto tables = testing::report_tables();
  const auto text = text_report({testing::stream_race_diagnostic()}, tables, {});
  EXPECT_NE(text.find("    #0 launch_sum(float const*) /src/demo/demo.cpp:42\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("SUMMARY: streamsan: stream-race (read-after-write) /src/demo/demo.cpp:42 in "
                      "launch_sum(float const*)\n"),
            std::string::npos)
      << text;
}

TEST(TextReport, LiveDiagnosticIsTheSameBlockAsInTheReport) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  std::ostringstream live;
  print_text_diagnostic(live, testing::stream_race_diagnostic(), symbols);
  const auto report = text_report({testing::stream_race_diagnostic()}, tables, {});
  EXPECT_EQ(report, live.str() + "streamsan: reported 1 warning\n");
}

TEST(TextReport, ReusedBlockNamesTheAllocationTheOperationAccessed) {
  const auto tables = testing::report_tables();
  auto race = testing::stream_race_diagnostic();
  race.current.alloc = alloc_id{3};    // the report's allocation: not repeated
  race.previous->alloc = alloc_id{7};  // an earlier block over the same bytes
  const auto text = text_report({race}, tables);
  EXPECT_NE(text.find("\n  Read of 4096 bytes at offset 0 by kernel 'sum'"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  Previous write of 4096 bytes at offset 0 of alloc#7 by kernel 'fill'"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace streamsan
