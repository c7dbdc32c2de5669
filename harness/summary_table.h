// The table `streamsan test` prints at the end: scenario, rules, expected
// verdict, seen verdict, result (and the backend and the schedule search
// when they vary or were asked for), then every failure message and a total.
#pragma once

#include <ostream>
#include <vector>

#include "harness/scenario_result.h"

namespace streamsan::harness {

void write_summary(std::ostream& out, const std::vector<scenario_result>& results);

// "62 scenario runs: 60 passed, 1 failed, 1 skipped".
std::string totals_line(const std::vector<scenario_result>& results);

}  // namespace streamsan::harness
