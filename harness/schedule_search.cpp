#include "harness/schedule_search.h"

#include "harness/outcome_check.h"
#include "harness/replay.h"

namespace streamsan::harness {
namespace {

// Expected buffers and host reads of `from`, keeping the buffers and labels
// that `s` also has (a twin may declare more).
void take_expectations(const scenario& from, const scenario& s, reference_values& ref) {
  for (const auto& b : from.expect.buffers) {
    const buffer_decl* d = s.find_buffer(b.buffer);
    if (d != nullptr && d->size == b.values.size()) ref.buffers[b.buffer] = b.values;
  }
  for (const auto& r : from.expect.results) {
    const auto* values = std::get_if<std::vector<float>>(&r.value);
    const auto index = s.find_label(r.label);
    if (values == nullptr || index == std::string::npos) continue;
    if (std::holds_alternative<host_read_op>(s.operations[index].body)) {
      ref.host_reads[r.label] = *values;
    }
  }
}

}  // namespace

reference_values reference_for(const scenario& s, const scenario* twin) {
  reference_values ref;
  if (s.expects_diagnostics() && twin != nullptr) {
    take_expectations(*twin, s, ref);
    ref.source = "fixed twin " + twin->name;
  } else if (!s.expects_diagnostics()) {
    take_expectations(s, s, ref);
    ref.source = "expectation";
  }
  if (!ref.buffers.empty() || !ref.host_reads.empty()) return ref;
  // Nothing expected: what the program computes in program order.
  const outcome eager = replay(s, {"sim", true, 1});
  ref.buffers.insert(eager.buffers.begin(), eager.buffers.end());
  for (const auto& [index, value] : eager.results) {
    const auto* values = std::get_if<std::vector<float>>(&value);
    if (values != nullptr && !s.operations[index].label.empty()) {
      ref.host_reads[s.operations[index].label] = *values;
    }
  }
  ref.source = "eager run";
  return ref;
}

std::optional<witness> compare_with_reference(const scenario& s, const reference_values& ref,
                                              const outcome& seen, std::uint64_t seed) {
  for (const auto& [name, expected] : ref.buffers) {
    const auto it = seen.buffers.find(name);
    if (it == seen.buffers.end()) continue;
    const auto at = first_difference(expected, it->second);
    if (at == no_operation || at >= expected.size() || at >= it->second.size()) continue;
    return witness{seed, "buffer " + name, at, expected[at], it->second[at], ref.source};
  }
  for (const auto& [label, expected] : ref.host_reads) {
    const auto it = seen.results.find(s.find_label(label));
    if (it == seen.results.end()) continue;
    const auto* values = std::get_if<std::vector<float>>(&it->second);
    if (values == nullptr) continue;
    const auto at = first_difference(expected, *values);
    if (at == no_operation || at >= expected.size() || at >= values->size()) continue;
    return witness{seed, "host read '" + label + "'", at, expected[at], (*values)[at], ref.source};
  }
  return std::nullopt;
}

schedule_report search_schedules(const scenario& s, const scenario* twin, std::uint64_t seeds,
                                 std::vector<std::string>& failures) {
  schedule_report report;
  const reference_values ref = reference_for(s, twin);
  bool reported = false;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    const outcome seen = replay(s, {"sim", false, seed});
    ++report.seeds;
    const auto w = compare_with_reference(s, ref, seen, seed);
    if (w) {
      ++report.wrong_seeds;
      if (!report.first) report.first = w;
    }
    if (reported) continue;
    // A fixed scenario must be right under every seed; any scenario's
    // diagnostics must not depend on the schedule.
    if (!s.expects_diagnostics() && w) {
      failures.push_back("scenario " + s.name + ": " + describe(*w) +
                         " although the scenario is declared correct");
      reported = true;
    }
    for (const auto& f : check_outcome(s, seen, !s.expects_diagnostics())) {
      failures.push_back(f + " (under seed " + std::to_string(seed) + ")");
      reported = true;
    }
  }
  return report;
}

}  // namespace streamsan::harness
