#include "sanitizer/report/text_report.h"

#include <gtest/gtest.h>

#include <sstream>

#include "sanitizer/report/describe.h"
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

// Note [Reports of several processes]: a process other than the one
// `streamsan run` started names itself in each headline and its summary.
TEST(TextReport, ANamedProcessSaysItsNameInHeadlinesAndSummary) {
  const auto tables = testing::report_tables();
  report_options options;
  options.process = process_name{4242, "python3 train.py --epochs 3"};
  const auto text = text_report({testing::stream_race_diagnostic()}, tables, options);
  EXPECT_NE(text.find("WARNING: streamsan: stream-race (read-after-write) on alloc#3 'A' (device "
                      "memory, 4096 bytes) in process 4242 (python3 train.py --epochs 3)\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text_report({}, tables, options),
            "streamsan: reported 0 warnings in process 4242 (python3 train.py --epochs 3)\n");
  // Unnamed, as before.
  EXPECT_EQ(text_report({testing::stream_race_diagnostic()}, tables, {}).find("in process"),
            std::string::npos);
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

// ---- footprints, atomics and candidates ----

TEST(TextReport, CandidatesAndMeasuredFootprintsMatchGolden) {
  const auto tables = testing::report_tables();
  const auto unmodelled = testing::sample_unmodelled_calls();
  expect_golden("possible_races.txt",
                text_report({testing::stream_race_diagnostic(), testing::inferred_candidate(),
                             testing::measured_atomic_race(), testing::half_measured_candidate()},
                            tables, {.source_root = "/src/demo"}, &unmodelled, 1));
}

TEST(TextReport, AtomicAccessesAndMeasuredFootprintsAreNamed) {
  const auto tables = testing::report_tables();
  const auto text = text_report({testing::measured_atomic_race()}, tables);
  EXPECT_NE(text.find("\n  Atomic access of 20 bytes at offset 16 (measured footprint) by kernel "
                      "'sum' on stream#2 (thread#1):\n"),
            std::string::npos)
      << text;
  // An exact extent (the API's own, declared, annotated) says nothing more.
  EXPECT_NE(text.find("\n  Previous write of 64 bytes at offset 0 by kernel 'fill'"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  Conflicting bytes: [16, 20), [28, 32) of alloc#3 (8 bytes)\n"),
            std::string::npos)
      << text;
}

TEST(TextReport, EveryAccessKindHasAName) {
  EXPECT_EQ(access_kind(access_mode::read), "read");
  EXPECT_EQ(access_kind(access_mode::write), "write");
  EXPECT_EQ(access_kind(access_mode::read_write), "read-write");
  EXPECT_EQ(access_kind(access_mode::atomic), "atomic access");
  EXPECT_EQ(access_kind(access_mode::read_atomic), "read+atomic access");
  EXPECT_EQ(access_kind(access_mode::write_atomic), "write+atomic access");
  EXPECT_EQ(access_kind(access_mode::read_write_atomic), "read-write+atomic access");
}

TEST(TextReport, CandidatesAreListedNotWarned) {
  const auto tables = testing::report_tables();
  const auto text = text_report({testing::inferred_candidate()}, tables);
  EXPECT_EQ(text.find("WARNING"), std::string::npos) << text;
  EXPECT_EQ(text.find("=================="), std::string::npos) << text;
  EXPECT_EQ(text,
            "streamsan: possible races (guessed footprints, not confirmed by a measurement): 1\n"
            "  stream-race (write-after-write), 4096 bytes of alloc#3 'A' at [0, 4096), seen 3 "
            "times:\n"
            "    kernel 'sum' on stream#2 (thread#1) at demo.cpp:42 (read-write, inferred "
            "footprint) after kernel 'fill' on stream#1 (thread#1) at demo.cpp:40 (read-write, "
            "inferred footprint)\n"
            "streamsan: rerun with --precise to measure every launch\n"
            "streamsan: reported 0 warnings; 1 possible race not confirmed\n");
}

TEST(TextReport, PrintLimitCountsWarningsAndCandidatesApart) {
  const auto tables = testing::report_tables();
  const auto text = text_report(
      {testing::inferred_candidate(), testing::stream_race_diagnostic(),
       testing::half_measured_candidate(), testing::measured_atomic_race()},
      tables, {.print_limit = 1, .source_root = "/src/demo"});
  EXPECT_NE(text.find("WARNING: streamsan: stream-race (read-after-write)"), std::string::npos);
  EXPECT_EQ(text.find("Atomic access"), std::string::npos) << text;
  EXPECT_NE(text.find("streamsan: … and 1 more not printed\n"), std::string::npos) << text;
  EXPECT_NE(text.find("measurement): 2\n  stream-race (write-after-write)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  … and 1 more\nstreamsan: rerun with --precise"), std::string::npos)
      << text;
  EXPECT_NE(text.find("streamsan: reported 2 warnings; 2 possible races not confirmed\n"),
            std::string::npos)
      << text;
}

TEST(TextReport, WithoutCandidatesThereIsNoPossibleRacesSection) {
  const auto tables = testing::report_tables();
  const auto text = text_report({testing::measured_atomic_race()}, tables);
  EXPECT_EQ(text.find("possible race"), std::string::npos) << text;
  EXPECT_EQ(text.find("--precise"), std::string::npos) << text;
}

TEST(TextReport, ALiveCandidateBlockIsANoteNotAWarning) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  std::ostringstream live;
  print_text_diagnostic(live, testing::inferred_candidate(), symbols);
  EXPECT_NE(live.str().find("NOTE: streamsan: possible stream-race (write-after-write) on alloc#3 "
                            "'A' (device memory, 4096 bytes) (guessed footprint, not confirmed "
                            "by a measurement)\n"),
            std::string::npos)
      << live.str();
  EXPECT_EQ(live.str().find("WARNING"), std::string::npos);
}

TEST(TextReport, SummaryAfterLivePrintingListsTheCandidates) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  const std::vector<diagnostic> all{testing::stream_race_diagnostic(),
                                    testing::inferred_candidate()};
  std::ostringstream out;
  print_text_summary(out, {.diagnostics = all, .tables = tables}, 1, symbols);
  EXPECT_EQ(out.str().find("more not printed"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("possible races (guessed footprints, not confirmed by a "
                           "measurement): 1\n"),
            std::string::npos);
  EXPECT_NE(out.str().find("streamsan: reported 1 warning; 1 possible race not confirmed\n"),
            std::string::npos);
}

}  // namespace
}  // namespace streamsan
