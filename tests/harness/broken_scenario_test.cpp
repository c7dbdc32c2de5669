// Each file in tests/harness/broken/ is malformed in one way; loading it
// must fail with exactly this message: FILE:LINE:COLUMN and what was
// expected.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "harness/scenario_error.h"
#include "harness/scenario_parser.h"
#include "harness/scenario_place.h"

namespace streamsan::harness {
namespace {

std::string broken_dir() {
  const char* dir = std::getenv("STREAMSAN_BROKEN_SCENARIOS");
  return dir == nullptr ? std::string() : dir;
}

struct broken_case {
  const char* file;
  std::string message;  // after "DIR/FILE:"
};

std::string load_error(const std::string& path) {
  try {
    load_scenario(place_of(path));
  } catch (const scenario_error& e) {
    return e.what();
  }
  return "loaded without error";
}

class BrokenScenario : public testing::TestWithParam<broken_case> {};

TEST_P(BrokenScenario, ErrorNamesFileLineColumnAndWhatWasExpected) {
  const char* dir = std::getenv("STREAMSAN_BROKEN_SCENARIOS");
  ASSERT_NE(dir, nullptr);
  const std::string path = std::string(dir) + "/" + GetParam().file;
  EXPECT_EQ(load_error(path), path + ":" + GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Files, BrokenScenario,
    testing::Values(
        broken_case{"bad_number.yaml",
                    "5:35: expected an integer for 'size' of item 1 of 'buffers' of scenario, "
                    "got 'four'"},
        broken_case{"missing_expect.yaml", "1:1: missing required key 'expect' in scenario"},
        broken_case{"race_without_twin.yaml",
                    "11:1: the scenario expects diagnostics, so it needs a 'twin': the fixed "
                    "scenario that does the same work correctly (every buggy scenario of a corpus "
                    "has one)"},
        broken_case{"slice_out_of_range.yaml",
                    "8:69: slice A[2:6] in 'src' of launch at line 8 (kernel copy) is empty or "
                    "outside buffer A (4 elements)"},
        broken_case{"unknown_key.yaml",
                    "9:32: unknown key 'strem' in launch at line 9 (kernel fill); did you mean "
                    "'stream'? (expected op, label, kernel, stream, out or value)"},
        broken_case{"unknown_label.yaml",
                    "14:74: unknown operation label 'scal' in 'current' of item 1 of "
                    "'diagnostics' of 'expect' of scenario; did you mean 'scale'? labels: fill, "
                    "scale"},
        broken_case{"unknown_operation.yaml",
                    "5:10: unknown operation 'sync'; did you mean 'synchronize'? (expected one "
                    "of: launch, memcpy, memset, record, wait, wait_stream, synchronize, query, "
                    "elapsed_time, destroy, alloc, free, record_stream, empty_cache, "
                    "memory_fraction, reset_peak_stats, memory_stats, host_write, host_read, "
                    "host_func, capture_begin, capture_end, graph_launch, device_guard, "
                    "stream_guard, set_device, nvtx_push, nvtx_pop, nvtx_mark, sync_debug_mode)"},
        broken_case{"unknown_rule.yaml",
                    "3:10: unknown rule id 'S-STREAM-10'; expected an S-... id of semantics.md"},
        broken_case{"unknown_stream.yaml",
                    "9:40: unknown stream 'main' in 'stream' of launch at line 9 (kernel fill); "
                    "declared: default, per_thread, side"},
        broken_case{"wrong_name.yaml",
                    "1:7: scenario name 'broken/other_name' does not match its file; expected "
                    "'broken/wrong_name', the file's path below the corpus root " +
                        resolved(broken_dir() + "/..")
                            .generic_string() +
                        " (marked by .streamsan-corpus), without .yaml"},
        broken_case{"wrong_value_count.yaml",
                    "10:16: expected one value or 4 values for the contents of buffer A, got 3"},
        broken_case{"yaml_syntax.yaml", "5:3: YAML syntax error: illegal block entry"}),
    [](const testing::TestParamInfo<broken_case>& info) {
      std::string name = info.param.file;
      return name.substr(0, name.find('.'));
    });

TEST(BrokenScenario, MissingFileIsNamed) {
  EXPECT_EQ(load_error("no/such/dir/x.yaml"), "no/such/dir/x.yaml: cannot open scenario file");
}

}  // namespace
}  // namespace streamsan::harness
