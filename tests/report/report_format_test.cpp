#include "sanitizer/report/report_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>

#include "tests/report/report_fixture.h"

namespace streamsan {
namespace {

using ::testing::HasSubstr;

constexpr report_format every_format[] = {report_format::text, report_format::json,
                                          report_format::sarif, report_format::html,
                                          report_format::chrome_trace};

TEST(ReportFormat, ParsesEveryFormatItPrints) {
  for (const auto format : every_format) {
    EXPECT_EQ(parse_report_format(to_string(format)), format);
  }
  EXPECT_EQ(parse_report_format("chrome-trace"), report_format::chrome_trace);
  EXPECT_EQ(parse_report_format("xml"), std::nullopt);
  EXPECT_EQ(parse_report_format("JSON"), std::nullopt);
}

// A kernel name that is not UTF-8 (it comes from the program) must not cost
// the report: every format still prints, and JSON / SARIF stay valid.
TEST(ReportFormat, EveryFormatPrintsANameThatIsNotUtf8) {
  auto tables = testing::report_tables();
  const string_id bad_name{900};
  tables.define_string(bad_name, "fill\xff\xfe");
  auto d = testing::stream_race_diagnostic();
  d.current.name = bad_name;
  // A timeline, so that the Chrome trace names the kernel too.
  auto timeline = std::make_shared<race_timeline>();
  timeline->ops = {timeline_op{.seq = 9, .name = d.previous->name, .stack = d.previous->stack},
                   timeline_op{.seq = 12, .name = bad_name, .stack = d.current.stack}};
  timeline->previous = 0;
  timeline->current = 1;
  d.timeline = timeline;
  const std::vector<diagnostic> diagnostics{d};
  for (const auto format : every_format) {
    symbolizer symbols(tables, symbol_source::log_only);
    std::ostringstream out;
    ASSERT_NO_THROW(print_report(out, format, {.diagnostics = diagnostics, .tables = tables},
                                 symbols, {}))
        << to_string(format);
    switch (format) {
      case report_format::text:
        EXPECT_THAT(out.str(), HasSubstr("streamsan: reported 1 warning"));
        break;
      case report_format::html:
        // The browser replaces the invalid bytes; the page must still hold
        // the warning.
        EXPECT_THAT(out.str(), HasSubstr("<h1>streamsan: 1 warning</h1>"));
        break;
      case report_format::json:
      case report_format::sarif:
      case report_format::chrome_trace: {
        const auto parsed = nlohmann::json::parse(out.str(), nullptr, false);
        EXPECT_FALSE(parsed.is_discarded()) << to_string(format) << ": " << out.str();
        EXPECT_THAT(out.str(), HasSubstr("fill\xef\xbf\xbd"));  // U+FFFD replaces 0xff
        break;
      }
    }
  }
}

}  // namespace
}  // namespace streamsan
