// `streamsan analyze` and `streamsan dump` on every bad trace of
// tests/log/hostile_traces.h: exit status 3 and one message naming the file,
// the byte offset and the cause. Hostile but valid traces are analyzed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/cli/run_streamsan.h"
#include "tests/log/hostile_traces.h"
#include "tests/log/sample_log.h"

namespace streamsan {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::run_streamsan;

constexpr std::string_view truncated_hint =
    "streamsan analyze: --allow-truncated analyzes the records before the end\n";

TEST(HostileTraceCli, AnalyzeRefusesEachBadTraceWithExitThreeAndTheOffset) {
  const auto dir = testing::scratch_dir("cli_bad_analyze");
  for (const auto& bad : testing::bad_traces()) {
    const auto path = (dir / (bad.name + ".trace")).string();
    testing::write_file_bytes(path, bad.bytes);
    const auto r = run_streamsan({"analyze", path});
    EXPECT_EQ(r.exit_code, 3) << bad.name;
    std::string expected = "streamsan analyze: " + path + ": " + bad.message + "\n";
    if (bad.name == "missing_end_marker") expected += truncated_hint;
    EXPECT_EQ(r.err, expected) << bad.name;
    EXPECT_EQ(r.out, "") << bad.name;
  }
}

TEST(HostileTraceCli, DumpRefusesEachBadTraceWithExitThreeAndTheOffset) {
  const auto dir = testing::scratch_dir("cli_bad_dump");
  for (const auto& bad : testing::bad_traces()) {
    const auto path = (dir / (bad.name + ".trace")).string();
    testing::write_file_bytes(path, bad.bytes);
    const auto r = run_streamsan({"dump", path});
    EXPECT_EQ(r.exit_code, 3) << bad.name;
    EXPECT_THAT(r.err, StartsWith("streamsan dump: " + path + ": " + bad.message + "\n"))
        << bad.name;
  }
}

TEST(HostileTraceCli, AllowTruncatedAcceptsOnlyAMissingEndMarker) {
  const auto dir = testing::scratch_dir("cli_bad_truncated");
  for (const auto& bad : testing::bad_traces()) {
    const auto path = (dir / (bad.name + ".trace")).string();
    testing::write_file_bytes(path, bad.bytes);
    const auto r = run_streamsan({"analyze", path, "--allow-truncated"});
    EXPECT_EQ(r.exit_code, bad.name == "missing_end_marker" ? 0 : 3) << bad.name;
  }
}

TEST(HostileTraceCli, HostileValuesAreAnalyzed) {
  const auto dir = testing::scratch_dir("cli_hostile_valid");
  for (const auto& hostile : testing::hostile_valid_traces()) {
    const auto path = (dir / (hostile.name + ".trace")).string();
    testing::write_file_bytes(path, hostile.bytes);
    const auto r = run_streamsan({"analyze", path, "--allow-truncated"});
    // The unordered memset across all 2^64 - 1 bytes races with the launch.
    EXPECT_EQ(r.exit_code, hostile.name == "huge_allocation" ? 66 : 0) << hostile.name << r.err;
    EXPECT_EQ(r.err, "") << hostile.name;
  }
}

}  // namespace
}  // namespace streamsan
