#include "harness/summary_table.h"

#include <algorithm>
#include <array>

namespace streamsan::harness {
namespace {

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : std::string(sep)) + i;
  return out;
}

std::string schedule_cell(const scenario_result& r) {
  if (!r.schedules) return "-";
  const auto& s = *r.schedules;
  if (s.first) return "witness: seed " + std::to_string(s.first->seed) + " (" +
                      std::to_string(s.wrong_seeds) + "/" + std::to_string(s.seeds) + " wrong)";
  return "no wrong value in " + std::to_string(s.seeds) + " seeds";
}

}  // namespace

std::string totals_line(const std::vector<scenario_result>& results) {
  std::array<std::size_t, 3> n{};
  for (const auto& r : results) ++n[static_cast<std::size_t>(r.status)];
  return std::to_string(results.size()) + " scenario runs: " + std::to_string(n[0]) + " passed, " +
         std::to_string(n[1]) + " failed, " + std::to_string(n[2]) + " skipped";
}

void write_summary(std::ostream& out, const std::vector<scenario_result>& results) {
  const bool several_backends = std::any_of(results.begin(), results.end(), [&](const auto& r) {
    return r.backend != results.front().backend;
  });
  const bool schedules = std::any_of(results.begin(), results.end(),
                                     [](const auto& r) { return r.schedules.has_value(); });
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header{"scenario", "rules", "expected", "seen", "result"};
  if (several_backends) header.insert(header.begin() + 1, "backend");
  if (schedules) header.push_back("schedules");
  rows.push_back(header);
  for (const auto& r : results) {
    std::vector<std::string> row{r.name, join(r.rules, ","), r.expected_verdict,
                                 r.seen_verdict.empty() ? "-" : r.seen_verdict,
                                 std::string(to_string(r.status))};
    if (r.status == result_status::skipped) row.back() += " (" + r.skip_reason + ")";
    if (several_backends) row.insert(row.begin() + 1, r.backend);
    if (schedules) row.push_back(schedule_cell(r));
    rows.push_back(std::move(row));
  }
  std::vector<std::size_t> width(header.size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    out << line << '\n';
  }
  bool first = true;
  for (const auto& r : results) {
    for (const auto& f : r.failures) {
      if (first) out << "\nfailures:\n";
      first = false;
      out << "  [" << r.backend << "] " << f << '\n';
    }
  }
  out << '\n' << totals_line(results) << '\n';
}

}  // namespace streamsan::harness
