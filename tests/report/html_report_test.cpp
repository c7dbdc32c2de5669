#include "sanitizer/report/html_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "tests/report/report_fixture.h"
#include "tests/report/timeline_fixture.h"

namespace streamsan {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string page(const std::vector<diagnostic>& diagnostics, const log_tables& tables) {
  symbolizer symbols(tables, symbol_source::log_only);
  std::ostringstream out;
  print_html_report(out, {.diagnostics = diagnostics, .tables = tables, .records_processed = 99},
                    symbols, {.source_root = "/src/demo"});
  return out.str();
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HtmlReport, IsOneSelfContainedPage) {
  const auto tables = testing::report_tables();
  const auto html = page(testing::every_kind_diagnostics(), tables);
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">")) << html.substr(0, 80);
  EXPECT_TRUE(html.ends_with("</html>\n"));
  // Note [The page fetches nothing]: no URL of any kind.
  EXPECT_THAT(html, Not(HasSubstr("http:")));
  EXPECT_THAT(html, Not(HasSubstr("https:")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, Not(HasSubstr("@import")));
  EXPECT_FALSE(std::regex_search(html, std::regex("url\\((?!#)")));
  EXPECT_EQ(count(html, "<section class=\"warning\""), testing::every_kind_diagnostics().size());
  EXPECT_THAT(html, HasSubstr("<h1>streamsan: 12 warnings</h1>"));
}

TEST(HtmlReport, RaceTimelineHasLanesOperationsEdgesAndTheMissingEdge) {
  const auto tables = testing::report_tables();
  const auto d = testing::race_with_timeline(testing::stream_race_diagnostic());
  const auto html = page({d}, tables);
  // A lane per host thread and stream, threads first.
  const auto thread_lane = html.find("data-lane=\"thread#1\"");
  const auto stream_lane = html.find("data-lane=\"stream#1\"");
  ASSERT_NE(thread_lane, std::string::npos);
  ASSERT_NE(stream_lane, std::string::npos);
  EXPECT_LT(thread_lane, stream_lane);
  EXPECT_THAT(html, HasSubstr("data-lane=\"stream#2\""));
  EXPECT_THAT(html, HasSubstr("data-lane=\"stream#3\""));
  EXPECT_EQ(count(html, "<g class=\"op"), 5u);
  EXPECT_EQ(count(html, "<g class=\"op conflict"), 2u);
  EXPECT_THAT(html, HasSubstr("class=\"op conflict current\""));
  EXPECT_THAT(html, HasSubstr("class=\"op conflict previous\""));
  EXPECT_THAT(html, HasSubstr("data-kind=\"event\" data-from=\"2\" data-to=\"3\""));
  EXPECT_THAT(html, HasSubstr("data-kind=\"issue\" data-from=\"0\" data-to=\"1\""));
  EXPECT_EQ(count(html, "<path class=\"edge missing\" data-from=\"1\" data-to=\"4\""), 1u);
  // Every operation's stack, for the click.
  for (int i = 0; i < 5; ++i) {
    EXPECT_THAT(html, HasSubstr("<div class=\"stack\" id=\"w1-op" + std::to_string(i) + "\" hidden>"));
  }
  EXPECT_THAT(html, HasSubstr("<li>#0 launch_sum(float const*) demo.cpp:42</li>"));
}

TEST(HtmlReport, NamesAreEscaped) {
  auto tables = testing::report_tables();
  tables.define_string(string_id{1}, "<script>alert('x')</script>");  // kernel 'fill'
  const auto d = testing::race_with_timeline(testing::stream_race_diagnostic());
  const auto html = page({d}, tables);
  EXPECT_THAT(html, Not(HasSubstr("<script>alert")));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(&#39;x&#39;)"));
  EXPECT_EQ(count(html, "<script>"), 1u);  // the page's own
}

TEST(HtmlReport, FixHintsMarkCode) {
  const auto tables = testing::report_tables();
  const auto html = page({testing::stream_race_diagnostic()}, tables);
  EXPECT_THAT(html, HasSubstr("<p class=\"fix\"><b>Fix:</b> make stream#2 wait for fill: "
                              "<code>cudaEventRecord(e, stream#1)</code> after it"));
  EXPECT_THAT(html, HasSubstr("No timeline was kept for this race."));
}

TEST(HtmlReport, CandidatesAreListedUnderTheWarningsNotAsWarnings) {
  const auto tables = testing::report_tables();
  const auto html = page({testing::inferred_candidate(), testing::measured_atomic_race()}, tables);
  EXPECT_EQ(count(html, "<section class=\"warning\""), 1u);
  EXPECT_THAT(html, HasSubstr("<h1>streamsan: 1 warning</h1>"));
  EXPECT_THAT(html, HasSubstr("<section class=\"possible\"><h2>Possible races</h2>"));
  EXPECT_THAT(html, HasSubstr("possible races (guessed footprints, not confirmed by a "
                              "measurement): 1"));
  EXPECT_THAT(html, HasSubstr("rerun with --precise"));
  EXPECT_THAT(page({testing::measured_atomic_race()}, tables), Not(HasSubstr("Possible races")));
}

TEST(HtmlReport, TheSummarySaysWhatWasNotChecked) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  std::ostringstream out;
  print_html_report(out,
                    {.diagnostics = {},
                     .tables = tables,
                     .records_processed = 5,
                     .device_synchronized_conflicts = 2,
                     .host_ordered_conflicts = 3},
                    symbols, {});
  const std::string html = out.str();
  EXPECT_THAT(html, HasSubstr("not checked: 2 conflicts between cooperative launches"));
  EXPECT_THAT(html, HasSubstr("not checked: 3 conflicts whose earlier access a host thread"));
  EXPECT_THAT(page({}, tables), Not(HasSubstr("not checked")));
}

TEST(HtmlEscaped, EscapesTheFiveCharacters) {
  EXPECT_EQ(html_escaped("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
}

}  // namespace
}  // namespace streamsan
