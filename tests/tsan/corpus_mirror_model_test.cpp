// The corpus check of corpus_mirror.h over the model of TSan: it sees the
// host accesses the engine sees (the runtime logs each host read and write),
// so here TSan and the engine must agree both ways.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "harness/replay.h"
#include "tests/tsan/corpus_mirror.h"
#include "tests/tsan/model_tsan.h"

namespace streamsan::testing {
namespace {

std::string describe(const model_report& r) {
  std::ostringstream out;
  const auto side = [&](const model_access& a) {
    out << (a.write ? "write" : "read") << " of [0x" << std::hex << a.begin << ", 0x" << a.end
        << std::dec << ") by " << a.context_name;
  };
  side(r.current);
  out << ", after ";
  side(r.previous);
  return out.str();
}

TEST(CorpusMirror, EveryScenarioWithAHostAccessOverTheModel) {
  model_tsan tsan;
  const report_source source{
      [&] { tsan.clear_reports(); },
      [&] {
        std::vector<mirror_report> out;
        for (const auto& r : tsan.reports()) {
          out.push_back({{r.current.begin, r.previous.begin}, describe(r)});
        }
        return out;
      },
  };
  std::size_t checked = 0, reports = 0;
  for (const auto& s : corpus_scenarios()) {
    if (!has_host_access(s) || !harness::cannot_run(s, "sim").empty()) continue;
    ++checked;
    const auto v = check_scenario(s, model_tsan::api(), source);
    reports += v.reports;
    for (const auto& p : v.problems) ADD_FAILURE() << s.name << ": " << p;
    for (const auto& b : v.missed) {
      ADD_FAILURE() << s.name << ": the engine found a host-device race on " << b
                    << " that the model of TSan did not";
    }
  }
  EXPECT_THAT(tsan.violations(), ::testing::IsEmpty());
  EXPECT_GT(checked, 40u);
  EXPECT_GT(reports, 10u);
  std::cout << checked << " scenarios with host accesses, " << reports << " reports\n";
}

}  // namespace
}  // namespace streamsan::testing
