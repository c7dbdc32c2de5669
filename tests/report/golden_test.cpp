// Golden tests: the reports of real traces and real programs, printed by
// the real front ends, compared with tests/report/golden/ after
// normalization (tests/report/golden_file.h). docs/reports.md shows the
// same files (tools/report-docs), so the documentation cannot drift from
// what streamsan prints.
//
//   cuda/NAME.txt      `streamsan analyze` of the CUDA-program traces in
//                      golden_traces.cpp (CUDA vocabulary)
//   runtime/NAME.txt   the live report of a program on the streamsan runtime
//                      (tests/report/programs/, sim backend, runtime vocabulary)
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/cli/run_streamsan.h"
#include "tests/log/sample_log.h"
#include "tests/report/golden_file.h"
#include "tests/report/golden_traces.h"

namespace streamsan {
namespace {

namespace fs = std::filesystem;
using testing::expect_golden;
using testing::normalized_report;

fs::path scratch(const std::string& name) {
  const auto dir = fs::temp_directory_path() / ("streamsan-golden-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

class CudaGolden : public ::testing::TestWithParam<std::string_view> {};

TEST_P(CudaGolden, AnalyzeTextMatches) {
  const std::string name(GetParam());
  const auto trace = scratch(name + ".trace");
  testing::write_golden_trace(name, trace);
  const auto r = testing::run_streamsan(
      {"analyze", trace.string(), "--source-root", std::string(testing::golden_source_root)});
  EXPECT_TRUE(r.exit_code == 66) << r.err;
  EXPECT_EQ(r.err, "");
  expect_golden("cuda/" + name + ".txt", normalized_report(r.out));
  fs::remove(trace);
}

INSTANTIATE_TEST_SUITE_P(Traces, CudaGolden, ::testing::ValuesIn(testing::golden_trace_names()),
                         [](const auto& info) { return std::string(info.param); });

// The runtime prints its reports live, on stderr, as the program runs.
struct program_output {
  int exit_code = -1;
  std::string err;
};

program_output run_program(const std::string& name) {
  const char* dir = std::getenv("STREAMSAN_GOLDEN_PROGRAMS");
  if (dir == nullptr) throw std::runtime_error("STREAMSAN_GOLDEN_PROGRAMS is not set");
  const auto err = scratch(name + ".err");
  const std::string command = "STREAMSAN=1 STREAMSAN_BACKEND=sim STREAMSAN_COLOR=never '" +
                              (fs::path(dir) / name).string() + "' >/dev/null 2>'" +
                              err.string() + "'";
  const int status = std::system(command.c_str());
  program_output out;
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  out.err = testing::read_file_bytes(err);
  fs::remove(err);
  return out;
}

class RuntimeGolden : public ::testing::TestWithParam<std::string_view> {};

TEST_P(RuntimeGolden, LiveReportMatches) {
  const std::string name(GetParam());
  const auto r = run_program(name);
  EXPECT_EQ(r.exit_code, 66) << r.err;
  expect_golden("runtime/" + name + ".txt", normalized_report(r.err));
}

constexpr std::string_view runtime_programs[] = {
    "side_stream", "host_read", "graph_capture", "record_stream", "unrecorded_wait",
};

INSTANTIATE_TEST_SUITE_P(Programs, RuntimeGolden, ::testing::ValuesIn(runtime_programs),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace streamsan
