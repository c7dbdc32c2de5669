// `streamsan test` end to end: exit codes, failure messages, reports and
// worker processes. Runs the streamsan executable the build produced.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace streamsan::harness {
namespace {

using testing::HasSubstr;
using testing::Not;

struct run_result {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : v;
}

// `streamsan test ARGS` run in `dir` ("" = here).
run_result streamsan_test(const std::string& args, const std::filesystem::path& dir = {}) {
  const std::string cd = dir.empty() ? "" : "cd '" + dir.string() + "' && ";
  const std::string command = cd + env("STREAMSAN_EXE") + " test " + args + " 2>&1";
  run_result r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  while (const auto n = std::fread(buf.data(), 1, buf.size(), pipe)) r.output.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::filesystem::path temp_dir() {
  auto dir = std::filesystem::temp_directory_path() /
             ("streamsan_test_command_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

const std::string wrong = env("STREAMSAN_WRONG_EXPECTATIONS");
const std::string broken = env("STREAMSAN_BROKEN_SCENARIOS");
const std::string corpus = env("STREAMSAN_SCENARIOS");

TEST(TestCommand, WrongExpectationsFailNamingScenarioOperationAndDifference) {
  const auto r = streamsan_test(wrong);
  EXPECT_EQ(r.exit_code, 1);  // exit_code::failed
  EXPECT_THAT(r.output, HasSubstr("scenario wrong_expectations/missed_race: expected stream-race "
                                  "(read-after-write) between 'sum' and 'fill' on buffer A, saw "
                                  "none"));
  EXPECT_THAT(r.output, HasSubstr("scenario wrong_expectations/missed_race_twin: buffer B after "
                                  "final synchronize: expected [1,1,1,1] saw [0,1,1,1] at index 0"));
  EXPECT_THAT(r.output, HasSubstr("scenario wrong_expectations/unexpected_error: result of 'done' "
                                  "(query event): expected false saw true"));
  EXPECT_THAT(r.output, HasSubstr("scenario wrong_expectations/unexpected_error: operation "
                                  "'elapsed': unexpected error \"elapsed_time("));
  EXPECT_THAT(r.output, HasSubstr("3 scenario runs: 0 passed, 3 failed, 0 skipped"));
}

TEST(TestCommand, MalformedScenarioIsBadInputWithItsPosition) {
  const auto r = streamsan_test(broken + "/unknown_stream.yaml");
  EXPECT_EQ(r.exit_code, 3);  // exit_code::bad_input
  EXPECT_THAT(r.output, HasSubstr(broken + "/unknown_stream.yaml:9:40: unknown stream 'main'"));
  EXPECT_THAT(r.output, HasSubstr("1 malformed scenario file(s)"));
}

TEST(TestCommand, EveryMalformedFileIsListed) {
  const auto r = streamsan_test(broken);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.output, HasSubstr("12 malformed scenario file(s)"));
}

TEST(TestCommand, BadOptionsAreUsageErrors) {
  auto r = streamsan_test(corpus + " --backend tpu");
  EXPECT_EQ(r.exit_code, 2);  // exit_code::usage
  EXPECT_THAT(r.output, HasSubstr("--backend must be sim, cuda, auto or all, not 'tpu'"));
  r = streamsan_test(corpus + " --require-witness");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--require-witness needs --schedules N"));
  r = streamsan_test("no/such/dir");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.output, HasSubstr("no/such/dir: no such file or directory"));
}

TEST(TestCommand, FilterThatMatchesNothingFails) {
  const auto r = streamsan_test(corpus + " --filter 'nothing/*'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("no scenario matches 'nothing/*'"));
}

TEST(TestCommand, ProgressIsOneLinePerScenarioWhenNotATerminal) {
  const auto r = streamsan_test(corpus + " --filter 'stream/side_stream_sum_*'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("[1/2] pass stream/side_stream_sum_fixed (sim, "));
  EXPECT_THAT(r.output, HasSubstr("[2/2] pass stream/side_stream_sum_race (sim, "));
  EXPECT_THAT(r.output, Not(HasSubstr("\r")));
  // The summary table's header and rows.
  EXPECT_THAT(r.output, testing::ContainsRegex("scenario +rules +expected +seen +result"));
  EXPECT_THAT(r.output, testing::ContainsRegex(
                            "stream/side_stream_sum_race +S-STREAM-2 +stream-race +stream-race +pass"));
}

TEST(TestCommand, JunitAndJsonReportsDescribeEveryRun) {
  const auto dir = temp_dir();
  const auto r = streamsan_test(wrong + " --junit " + (dir / "j/junit.xml").string() + " --json " +
                                (dir / "report.json").string());
  EXPECT_EQ(r.exit_code, 1);
  const std::string xml = read_file(dir / "j/junit.xml");
  EXPECT_THAT(xml, HasSubstr("<testsuites name=\"streamsan test\" tests=\"3\" failures=\"3\""));
  EXPECT_THAT(xml, HasSubstr("<testcase classname=\"scenarios.wrong_expectations\" "
                             "name=\"missed_race [sim]\""));
  EXPECT_THAT(xml, HasSubstr("<failure message=\"scenario wrong_expectations/missed_race: expected "
                             "stream-race (read-after-write) between &apos;sum&apos; and "
                             "&apos;fill&apos; on buffer A, saw none\""));
  const auto json = nlohmann::json::parse(read_file(dir / "report.json"));
  EXPECT_EQ(json["summary"]["failed"], 3);
  EXPECT_EQ(json["scenarios"][0]["name"], "wrong_expectations/missed_race");
  EXPECT_EQ(json["scenarios"][0]["expected_verdict"], "stream-race");
  EXPECT_EQ(json["scenarios"][0]["seen_verdict"], "clean");
  std::filesystem::remove_all(dir);
}

TEST(TestCommand, SchedulesReportAWitnessForARealRace) {
  const auto dir = temp_dir();
  const auto r = streamsan_test(corpus + " --filter 'stream/side_stream_sum_*' --schedules 20 "
                                "--require-witness --json " + (dir / "s.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto json = nlohmann::json::parse(read_file(dir / "s.json"));
  const auto& fixed = json["scenarios"][0];
  const auto& racy = json["scenarios"][1];
  ASSERT_EQ(racy["name"], "stream/side_stream_sum_race");
  EXPECT_EQ(fixed["schedules"]["wrong_seeds"], 0);
  EXPECT_TRUE(fixed["schedules"]["witness"].is_null());
  EXPECT_GT(racy["schedules"]["wrong_seeds"], 0);
  const auto& w = racy["schedules"]["witness"];
  EXPECT_EQ(w["where"], "buffer S");
  EXPECT_EQ(w["expected"], 4.0);  // what the fixed twin says S holds
  EXPECT_NE(w["seen"], 4.0);
  EXPECT_EQ(w["reference"], "fixed twin stream/side_stream_sum_fixed");
  std::filesystem::remove_all(dir);
}

TEST(TestCommand, RequireWitnessFailsARaceWhoseValuesCannotDiffer) {
  // launch_blocking runs every seed in program order: the race is real, but
  // no schedule can show a wrong value.
  const auto r = streamsan_test(corpus + " --filter 'async/launch_blocking_still_reports_race' "
                                "--schedules 5 --require-witness");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("scenario async/launch_blocking_still_reports_race: no seed of 5 "
                                  "produced a wrong value (no witness for the race)"));
}

TEST(TestCommand, WorkerProcessesGiveTheSameResults) {
  const auto dir = temp_dir();
  const auto one = streamsan_test(corpus + " --filter 'event/*' --json " + (dir / "1.json").string());
  const auto two = streamsan_test(corpus + " --filter 'event/*' --jobs 3 --json " +
                                  (dir / "2.json").string());
  EXPECT_EQ(one.exit_code, 0);
  EXPECT_EQ(two.exit_code, 0);
  auto a = nlohmann::json::parse(read_file(dir / "1.json"));
  auto b = nlohmann::json::parse(read_file(dir / "2.json"));
  ASSERT_EQ(a["scenarios"].size(), b["scenarios"].size());
  for (std::size_t i = 0; i < a["scenarios"].size(); ++i) {
    for (const char* key : {"name", "result", "seen_verdict", "seen_diagnostics", "failures"}) {
      EXPECT_EQ(a["scenarios"][i][key], b["scenarios"][i][key]) << key;
    }
  }
  std::filesystem::remove_all(dir);
}


// ---- scenarios of users (issue #14) ----

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A correct scenario named `name`, with no twin, and no rules unless given.
std::string user_scenario(const std::string& name, const std::string& diagnostics = "none",
                          const std::string& rules = "") {
  return "name: " + name + "\n" + rules +
         "buffers:\n  - {name: A, kind: device, size: 4, fill: 0}\n"
         "operations:\n  - {op: launch, kernel: fill, out: A, value: 2, label: fill}\n"
         "expect:\n  diagnostics: " + diagnostics + "\n  buffers: {A: 2}\n";
}

// The same file named four ways: relative from its folder, '.', absolute,
// and from the parent folder. Each run must say the same thing about it.
struct naming {
  const char* how;
  std::string args;
  std::filesystem::path cwd;
};

std::vector<naming> four_ways(const std::filesystem::path& folder, const std::string& file) {
  return {{"relative", file, folder},
          {"dot", ".", folder},
          {"absolute", (folder / file).string(), std::filesystem::path("/")},
          {"parent folder", folder.filename().string() + "/" + file, folder.parent_path()}};
}

TEST(UserScenarios, OutsideACorpusTheNameIsFreeWhereverTheCommandRuns) {
  const auto dir = temp_dir() / "free";
  // The name that once failed as "does not match; expected 'ux/my_race'".
  write(dir / "ux/my_race.yaml", user_scenario("ux/my_race", "[]"));
  for (const auto& n : four_ways(dir / "ux", "my_race.yaml")) {
    const auto r = streamsan_test(n.args, n.cwd);
    EXPECT_EQ(r.exit_code, 0) << n.how << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("1 scenario runs: 1 passed, 0 failed, 0 skipped")) << n.how;
  }
  std::filesystem::remove_all(dir);
}

TEST(UserScenarios, InACorpusTheExpectedNameIsTheSameWhereverTheCommandRuns) {
  const auto dir = temp_dir() / "marked";
  write(dir / ".streamsan-corpus", "# a corpus root\n");
  const std::string rules =
      "rules:\n  - {id: S-STREAM-1, text: \"Operations inside one stream run in the order they "
      "were issued.\"}\n";
  write(dir / "ux/my_race.yaml", user_scenario("my_race", "none", rules));
  const std::string root = std::filesystem::canonical(dir).string();
  for (const auto& n : four_ways(dir / "ux", "my_race.yaml")) {
    const auto r = streamsan_test(n.args, n.cwd);
    EXPECT_EQ(r.exit_code, 3) << n.how << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("my_race.yaml:1:7: scenario name 'my_race' does not match its "
                                    "file; expected 'ux/my_race', the file's path below the corpus "
                                    "root " + root + " (marked by .streamsan-corpus), without "
                                    ".yaml")) << n.how;
  }
  write(dir / "ux/my_race.yaml", user_scenario("ux/my_race", "none", rules));
  for (const auto& n : four_ways(dir / "ux", "my_race.yaml")) {
    const auto r = streamsan_test(n.args, n.cwd);
    EXPECT_EQ(r.exit_code, 0) << n.how << ": " << r.output;
  }
  std::filesystem::remove_all(dir);
}

TEST(UserScenarios, StrictHoldsAnUnmarkedTreeToTheCorpusRules) {
  const auto dir = temp_dir() / "strict";
  write(dir / "area/x.yaml", user_scenario("area/x"));
  EXPECT_EQ(streamsan_test((dir / "area/x.yaml").string()).exit_code, 0);
  const auto r = streamsan_test("--strict " + dir.string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.output, HasSubstr(dir.string() + "/area/x.yaml:1:1: missing required key 'rules' "
                                  "in scenario"));
  // The folder given is the root: the name below it matches, and workers
  // hold the file to the same level.
  const std::string rules =
      "rules:\n  - {id: S-SYNC-1, text: \"waits for all work in all streams of the device\"}\n";
  write(dir / "area/x.yaml", user_scenario("area/x", "none", rules));
  write(dir / "area/y.yaml", user_scenario("area/y", "none", rules));
  const auto ok = streamsan_test("--strict " + dir.string() + " --jobs 2");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  const auto sub = streamsan_test("--strict " + (dir / "area").string());
  EXPECT_EQ(sub.exit_code, 3);
  EXPECT_THAT(sub.output, HasSubstr("scenario name 'area/x' does not match its file; expected 'x'"));
  std::filesystem::remove_all(dir);
}

TEST(UserScenarios, AMalformedMarkerIsBadInputWithItsPosition) {
  const auto dir = temp_dir() / "bad_marker";
  write(dir / ".streamsan-corpus", "# fine\n  strict: true\n");
  write(dir / "x.yaml", user_scenario("x"));
  write(dir / "y.yaml", user_scenario("y"));
  const auto r = streamsan_test(dir.string());
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.output, HasSubstr("1 malformed scenario file(s)"));  // said once for both
  EXPECT_THAT(r.output, HasSubstr(std::filesystem::canonical(dir).string() +
                                  "/.streamsan-corpus:2:3: unexpected content in a corpus marker; "
                                  "it holds comments only (lines starting with '#'): the file's "
                                  "presence marks the corpus root"));
  std::filesystem::remove_all(dir);
}

TEST(UserScenarios, InitWritesAScenarioThatRunsAsWritten) {
  const auto dir = temp_dir() / "init";
  std::filesystem::create_directories(dir);
  auto r = streamsan_test("--init first", dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("wrote first.yaml"));
  EXPECT_THAT(read_file(dir / "first.yaml"), HasSubstr("\nname: first "));
  r = streamsan_test("first.yaml", dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("1 scenario runs: 1 passed"));
  // Never over a file.
  r = streamsan_test("--init first", dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("first.yaml exists; --init does not overwrite a file"));
  std::filesystem::remove_all(dir);
}

TEST(UserScenarios, InitRacyWritesAPairWithAWitness) {
  const auto dir = temp_dir() / "init_racy";
  std::filesystem::create_directories(dir);
  auto r = streamsan_test("--init sums/side_sum_race --racy", dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("wrote sums/side_sum_race.yaml and sums/side_sum_fixed.yaml"));
  r = streamsan_test("sums --schedules 20 --require-witness", dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, testing::ContainsRegex("side_sum_race +S-STREAM-2 +stream-race +stream-race "
                                               "+pass +witness: seed"));
  std::filesystem::remove_all(dir);
}

TEST(UserScenarios, InitInsideACorpusFollowsItsRules) {
  const auto dir = temp_dir() / "init_corpus";
  write(dir / ".streamsan-corpus", "");
  auto r = streamsan_test("--init area/copy_race --racy", dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(read_file(dir / "area/copy_race.yaml"), HasSubstr("\nname: area/copy_race "));
  EXPECT_THAT(read_file(dir / "area/copy_race.yaml"), HasSubstr("\ntwin: area/copy_fixed "));
  r = streamsan_test("area/copy_race.yaml", dir);  // its twin is found below the root
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace streamsan::harness
