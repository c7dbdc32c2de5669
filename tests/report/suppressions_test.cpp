#include "sanitizer/report/suppressions.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/report/report_fixture.h"

namespace streamsan {
namespace {

std::string parse_error(std::string_view text) {
  try {
    suppressions::parse(text, "supp.txt");
    return {};
  } catch (const suppression_error& e) {
    return e.what();
  }
}

TEST(Suppressions, ParsesRulesCommentsAndBlankLines) {
  const auto rules = suppressions::parse(
      "# a comment\n"
      "\n"
      "race:fill\n"
      "  sync: ^sync_all$  \n"
      "use-after-free:*/vendor/*\r\n"
      "race:ns::function",
      "supp.txt");
  ASSERT_EQ(rules.rules().size(), 4u);
  EXPECT_EQ(rules.rules()[0].category, "race");
  EXPECT_EQ(rules.rules()[0].pattern, "fill");
  EXPECT_EQ(rules.rules()[0].origin, "supp.txt:3");
  EXPECT_EQ(rules.rules()[1].category, "sync");
  EXPECT_EQ(rules.rules()[1].pattern, "^sync_all$");
  EXPECT_EQ(rules.rules()[1].origin, "supp.txt:4");
  EXPECT_EQ(rules.rules()[2].category, "use-after-free");
  EXPECT_EQ(rules.rules()[2].pattern, "*/vendor/*");
  EXPECT_EQ(rules.rules()[3].pattern, "ns::function");  // only the first ':' splits
  EXPECT_TRUE(suppressions::parse("", "empty").empty());
  EXPECT_TRUE(suppressions::parse("# only\n\n", "comments").empty());
}

TEST(Suppressions, MalformedLinesNameFileLineAndCause) {
  EXPECT_EQ(parse_error("race:a\nfill_kernel\n"),
            "supp.txt:2: expected TYPE:PATTERN (e.g. race:my_kernel), got 'fill_kernel'");
  EXPECT_EQ(parse_error("\n\nrase:fill\n"),
            "supp.txt:3: unknown suppression type 'rase' (expected race, sync or a diagnostic "
            "kind such as stream-race)");
  EXPECT_EQ(parse_error("race:   \n"), "supp.txt:1: empty pattern after 'race:'");
  EXPECT_EQ(parse_error("sync:a^b\n"), "supp.txt:1: '^' may only begin a pattern");
  EXPECT_EQ(parse_error("sync:a$b\n"), "supp.txt:1: '$' may only end a pattern");
  EXPECT_EQ(parse_error("race:^$\n"), "supp.txt:1: pattern '^$' matches nothing");
}

TEST(Suppressions, UnreadableFileNamesThePath) {
  try {
    suppressions::load("/nonexistent/streamsan.supp");
    FAIL() << "no error";
  } catch (const suppression_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "/nonexistent/streamsan.supp: cannot read suppressions file: No such file or "
              "directory");
  }
}

TEST(Suppressions, GlobsMatchAnywhereUnlessAnchored) {
  EXPECT_TRUE(suppression_pattern_matches("fill", "launch_fill(float*)"));
  EXPECT_TRUE(suppression_pattern_matches("^launch", "launch_fill(float*)"));
  EXPECT_FALSE(suppression_pattern_matches("^fill", "launch_fill(float*)"));
  EXPECT_TRUE(suppression_pattern_matches("*)$", "launch_fill(float*)"));
  EXPECT_FALSE(suppression_pattern_matches("fill$", "launch_fill(float*)"));
  EXPECT_TRUE(suppression_pattern_matches("^launch_*(float*)$", "launch_fill(float*)"));
  EXPECT_TRUE(suppression_pattern_matches("la*fi*oat", "launch_fill(float*)"));
  EXPECT_FALSE(suppression_pattern_matches("fill*sum", "launch_fill(float*)"));
  EXPECT_TRUE(suppression_pattern_matches("^demo.cpp$", "demo.cpp"));
  EXPECT_FALSE(suppression_pattern_matches("x", ""));
  EXPECT_TRUE(suppression_pattern_matches("*", "anything"));
}

std::optional<std::size_t> match(std::string_view text, const diagnostic& d) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  return suppressions::parse(text, "supp.txt").match(d, symbols);
}

TEST(Suppressions, MatchOperationNamesFramesFilesAndLabels) {
  const auto race = testing::stream_race_diagnostic();
  EXPECT_EQ(match("race:^sum$", race), 0u);                      // current kernel name
  EXPECT_EQ(match("race:^fill$", race), 0u);                     // previous kernel name
  EXPECT_EQ(match("race:launch_fill", race), 0u);                // previous frame function
  EXPECT_EQ(match("race:*/demo/demo.cpp$", race), 0u);           // frame file
  EXPECT_EQ(match("race:^A$", race), 0u);                        // allocation label
  EXPECT_EQ(match("race:make_buffers", race), std::nullopt);     // allocation site: not matched
  EXPECT_EQ(match("race:nothing_like_it", race), std::nullopt);
  EXPECT_EQ(match("race:nothing\nrace:main", race), 1u);         // first matching rule wins
}

TEST(Suppressions, CategoriesSelectKinds) {
  const auto all = testing::every_kind_diagnostics();
  const auto& race = all[0];        // stream-race
  const auto& unrecorded = all[6];  // unrecorded-event
  EXPECT_EQ(match("sync:main", race), std::nullopt);
  EXPECT_EQ(match("race:main", unrecorded), std::nullopt);
  EXPECT_EQ(match("sync:main", unrecorded), 0u);
  EXPECT_EQ(match("stream-race:main", race), 0u);
  EXPECT_EQ(match("host-device-race:main", race), std::nullopt);
  EXPECT_EQ(match("unrecorded-event:sync_all", unrecorded), 0u);
}

TEST(Suppressions, ApplyCountsWhatWasRemovedPerRule) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  const auto all = testing::every_kind_diagnostics();
  const auto rules = suppressions::parse("sync:sync_all\nrace:^sum$\nrace:never\n", "supp.txt");
  const auto result = apply_suppressions(all, rules, symbols);
  // sync_all is in a stack of every sync diagnostic (5); kernel 'sum' is
  // the current or previous operation of 4 races (stream, host-device,
  // free-while-in-use, use-after-free).
  EXPECT_EQ(result.hits, (std::vector<std::uint64_t>{5, 4, 0}));
  EXPECT_EQ(result.suppressed, 9u);
  ASSERT_EQ(result.kept.size(), all.size() - 9);
  for (const auto& d : result.kept) {
    EXPECT_FALSE(rules.match(d, symbols).has_value());
  }
}

TEST(Suppressions, ApplyToCandidatesAsToConfirmedDiagnostics) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  const std::vector<diagnostic> all{testing::inferred_candidate(),
                                    testing::half_measured_candidate(),
                                    testing::measured_atomic_race()};
  const auto rules = suppressions::parse("stream-race:^B$\n", "supp.txt");  // alloc#5's label
  const auto result = apply_suppressions(all, rules, symbols);
  EXPECT_EQ(result.suppressed, 1u);
  ASSERT_EQ(result.kept.size(), 2u);
  EXPECT_TRUE(is_candidate(result.kept[0]));
  EXPECT_EQ(result.kept[0].allocation->id, alloc_id{3});
  EXPECT_EQ(confirmed_count(result.kept), 1u);
  const auto everything = apply_suppressions(all, suppressions::parse("race:fill\n", "s"), symbols);
  EXPECT_EQ(everything.suppressed, 3u);
}

}  // namespace
}  // namespace streamsan
