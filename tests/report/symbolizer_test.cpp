#include "sanitizer/report/symbolizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sanitizer/report/describe.h"
#include "tests/report/report_fixture.h"

namespace streamsan {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;

TEST(Symbolizer, PrefersTheSymbolsThatCameWithTheLog) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_then_this_process);
  const symbol_info& s = symbols.symbolize(0x1100);
  EXPECT_EQ(s.function, "launch_sum(float const*)");
  EXPECT_EQ(s.file, "/src/demo/demo.cpp");
  EXPECT_EQ(s.line, 42u);
  EXPECT_EQ(&s, tables.symbol(0x1100));  // no copy
}

[[gnu::noinline]] std::uint64_t return_address_here() {
  return reinterpret_cast<std::uint64_t>(__builtin_return_address(0));
}

TEST(Symbolizer, LogOnlyNeverAsksThisProcess) {
  log_tables tables;
  symbolizer symbols(tables, symbol_source::log_only);
  const symbol_info& s = symbols.symbolize(return_address_here());
  EXPECT_TRUE(s.function.empty());
  EXPECT_TRUE(s.file.empty());
  EXPECT_TRUE(s.module.empty());
}

TEST(Symbolizer, FallsBackToThisProcessAndCaches) {
  log_tables tables;
  symbolizer symbols(tables, symbol_source::log_then_this_process);
  const auto address = return_address_here();
  const symbol_info& s = symbols.symbolize(address);
  EXPECT_THAT(s.function, HasSubstr("FallsBackToThisProcessAndCaches"));
  EXPECT_THAT(s.file, EndsWith("symbolizer_test.cpp"));
  EXPECT_GT(s.line, 0u);
  EXPECT_THAT(s.module, EndsWith("report_tests"));
  EXPECT_EQ(&symbols.symbolize(address), &s);  // cached
}

TEST(Symbolizer, FramesWithoutSymbolsShowAddressOrModule) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  EXPECT_EQ(describe_frame(0x3000, symbols.symbolize(0x3000), {}), "0x3000");
  EXPECT_EQ(describe_frame(0x3100, symbols.symbolize(0x3100), {}),
            "libfoo_call (libfoo.so.1+0x3100)");
  symbol_info module_only{"", "", 0, "/lib/x.so", 0x42};
  EXPECT_EQ(describe_frame(0x9000, module_only, {}), "0x9000 (x.so+0x42)");
  EXPECT_EQ(describe_frame(0x1000, symbols.symbolize(0x1000), "/src"),
            "launch_fill(float*) demo/demo.cpp:40");
}

TEST(Symbolizer, CallSiteIsTheFirstFrameWithASourceFile) {
  const auto tables = testing::report_tables();
  symbolizer symbols(tables, symbol_source::log_only);
  const auto site = find_call_site(stack_id{4}, symbols);  // 0x3000, 0x3100, main
  ASSERT_TRUE(site.has_value());
  EXPECT_EQ(site->address, 0x2000u);
  EXPECT_EQ(describe_call_site(*site, "/src/demo"), "demo.cpp:60 in main");
  EXPECT_FALSE(find_call_site(stack_id{}, symbols).has_value());
}

TEST(Symbolizer, DisplayPathIsRelativeOnlyUnderTheRoot) {
  EXPECT_EQ(display_path("/src/demo/a.cpp", "/src"), "demo/a.cpp");
  EXPECT_EQ(display_path("/src/demo/a.cpp", "/src/"), "demo/a.cpp");
  EXPECT_EQ(display_path("/other/a.cpp", "/src"), "/other/a.cpp");
  EXPECT_EQ(display_path("/srcx/a.cpp", "/src"), "/srcx/a.cpp");
  EXPECT_EQ(display_path("/src/demo/a.cpp", ""), "/src/demo/a.cpp");
}

}  // namespace
}  // namespace streamsan
