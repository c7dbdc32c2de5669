#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "tests/cli/run_streamsan.h"
#include "tests/log/sample_log.h"

namespace streamsan {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::run_streamsan;

std::vector<nlohmann::json> lines_of(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

TEST(DumpCommand, PrintsOneJsonObjectPerRecord) {
  const auto dir = testing::scratch_dir("dump_ok");
  const auto log = testing::sample_log();
  testing::write_trace(dir / "t.bin", log);
  const auto r = run_streamsan({"dump", (dir / "t.bin").string()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), log.size());
  EXPECT_EQ(lines.front().at("kind"), "string_define");
  EXPECT_EQ(lines.back().at("kind"), "thread_exit");
  const auto& unmodelled = lines[lines.size() - 2];
  EXPECT_EQ(unmodelled.at("kind"), "unmodelled_call");
  EXPECT_EQ(unmodelled.at("api"), "cudaMemPrefetchAsync");
}

TEST(DumpCommand, CorruptTracePrintsWhatCameBeforeAndExitsThree) {
  const auto dir = testing::scratch_dir("dump_corrupt");
  const auto log = testing::sample_log();
  testing::write_trace(dir / "t.bin", log);
  auto bytes = testing::read_file_bytes(dir / "t.bin");
  bytes.resize(bytes.size() - 10);
  testing::write_file_bytes(dir / "t.bin", bytes);
  const auto r = run_streamsan({"dump", (dir / "t.bin").string()});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, StartsWith("streamsan dump: " + (dir / "t.bin").string() + ": offset "));
  const auto lines = lines_of(r.out);
  EXPECT_GT(lines.size(), 0u);
  EXPECT_LT(lines.size(), log.size());
}

TEST(DumpCommand, UsageErrors) {
  EXPECT_EQ(run_streamsan({"dump"}).exit_code, 2);
  const auto bogus = run_streamsan({"dump", "t.bin", "--bogus"});
  EXPECT_EQ(bogus.exit_code, 2);
  EXPECT_THAT(bogus.err, StartsWith("streamsan dump: unrecognised option '--bogus'\n"));
  EXPECT_EQ(run_streamsan({"dump", "a.bin", "b.bin"}).exit_code, 2);
  const auto help = run_streamsan({"dump", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, StartsWith("usage: streamsan dump TRACE"));
}

}  // namespace
}  // namespace streamsan
