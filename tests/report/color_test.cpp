#include "sanitizer/report/color.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>

#include "sanitizer/report/text_report.h"
#include "tests/report/report_fixture.h"

namespace streamsan {
namespace {

TEST(Color, ModesParseAndForcedModesWin) {
  EXPECT_EQ(parse_color_mode("auto"), color_mode::automatic);
  EXPECT_EQ(parse_color_mode("always"), color_mode::always);
  EXPECT_EQ(parse_color_mode("never"), color_mode::never);
  EXPECT_EQ(parse_color_mode("sometimes"), std::nullopt);
  EXPECT_TRUE(use_color(color_mode::always, -1));
  EXPECT_FALSE(use_color(color_mode::never, -1));
}

TEST(Color, AutomaticIsOffForFilesAndPipes) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  EXPECT_FALSE(use_color(color_mode::automatic, fileno(file)));
  std::fclose(file);
  EXPECT_FALSE(use_color(color_mode::automatic, -1));
}

std::string report(bool color) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  std::ostringstream out;
  report_options options;
  options.color = color;
  print_text_diagnostic(out, testing::stream_race_diagnostic(), symbols, options);
  return out.str();
}

TEST(Color, TextUsesEscapesOnlyWhenAsked) {
  EXPECT_EQ(report(false).find('\033'), std::string::npos);
  const auto colored = report(true);
  EXPECT_NE(colored.find("\033[1m\033[31mWARNING: streamsan: stream-race"), std::string::npos)
      << colored;
  EXPECT_NE(colored.find("\033[32mFix: "), std::string::npos) << colored;
  // Every escape is closed on its line.
  std::istringstream lines(colored);
  for (std::string line; std::getline(lines, line);) {
    if (line.find('\033') != std::string::npos) {
      EXPECT_TRUE(line.ends_with("\033[0m")) << line;
    }
  }
}

}  // namespace
}  // namespace streamsan
