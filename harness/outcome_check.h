// Compares what a replay observed with what the scenario expects. Each
// failure is one message that names the scenario, the operation (by label)
// and the difference, e.g.
//   scenario event/x: expected stream-race (read-after-write) between 'sum'
//   and 'fill' on buffer A, saw none
//   scenario event/x: buffer B after final synchronize: expected [1,1,1,1]
//   saw [0,1,1,1] at index 0
#pragma once

#include <string>
#include <vector>

#include "harness/outcome.h"
#include "harness/scenario.h"

namespace streamsan::harness {

// values = false skips buffer contents and host-read results: under the sim's
// random scheduler a racy scenario's values legitimately vary.
std::vector<std::string> check_outcome(const scenario& s, const outcome& seen, bool values = true);

// "clean", or the distinct diagnostic kinds joined by '+', sorted.
std::string expected_verdict(const scenario& s);
std::string seen_verdict(const outcome& seen);

// One-line descriptions, as used in failure messages.
std::string describe(const scenario& s, const seen_diagnostic& d);
std::string describe(const expected_diagnostic& d);
// "0.5", "4", "1e+30": the shortest form that reads back as the same float.
std::string format_number(float v);
// "[1,1,0.5]".
std::string format_values(const std::vector<float>& values);
// Index of the first element that differs (values compare with a small
// relative tolerance: reduce_sum's order of summation is unspecified), or
// no_operation when they agree.
std::size_t first_difference(const std::vector<float>& expected, const std::vector<float>& seen);

}  // namespace streamsan::harness
