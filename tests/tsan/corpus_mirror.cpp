#include "tests/tsan/corpus_mirror.h"

#include <cstdlib>
#include <set>
#include <stdexcept>
#include <variant>

#include "harness/corpus.h"
#include "harness/replay.h"

namespace streamsan::testing {
namespace {

bool host_kind(harness::buffer_kind k) {
  return k == harness::buffer_kind::pinned || k == harness::buffer_kind::pageable ||
         k == harness::buffer_kind::managed;
}

// Diagnostics a TSan report on the same buffer may stand for.
bool unordered_kind(diagnostic_kind k) {
  switch (k) {
    case diagnostic_kind::stream_race:
    case diagnostic_kind::host_device_race:
    case diagnostic_kind::free_while_in_use:
    case diagnostic_kind::use_after_free:
    case diagnostic_kind::use_before_alloc:
      return true;
    case diagnostic_kind::graph_node_race:
    case diagnostic_kind::unrecorded_event:
    case diagnostic_kind::destroyed_stream_use:
    case diagnostic_kind::destroyed_event_use:
    case diagnostic_kind::sync_during_capture:
    case diagnostic_kind::event_device_mismatch:
      return false;
  }
  return false;
}

}  // namespace

bool has_host_access(const harness::scenario& s) {
  const auto host_buffer = [&](const std::string& name) {
    const auto* b = s.find_buffer(name);
    return b != nullptr && host_kind(b->kind);
  };
  for (const auto& op : s.operations) {
    const bool host = std::visit(
        [&](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, harness::host_read_op> ||
                        std::is_same_v<T, harness::host_write_op> ||
                        std::is_same_v<T, harness::host_func_op>) {
            return true;
          } else if constexpr (std::is_same_v<T, harness::memcpy_op>) {
            return host_buffer(o.dst.buffer) || host_buffer(o.src.buffer);
          } else if constexpr (std::is_same_v<T, harness::memset_op>) {
            return host_buffer(o.dst.buffer);
          } else {
            return false;
          }
        },
        op.body);
    if (host) return true;
  }
  return false;
}

mirror_verdict check_scenario(const harness::scenario& s, const tsan::tsan_api& api,
                              const report_source& reports) {
  mirror_verdict v;
  v.scenario = s.name;
  harness::replay_options options;
  options.backend = "sim";
  options.seed = 1;
  options.tsan = &api;
  reports.clear();
  const auto out = harness::replay(s, options);
  const auto found = reports.take();
  v.reports = found.size();

  std::set<std::string> unordered;  // buffers the engine found unordered accesses on
  std::set<std::string> host_races;
  for (const auto& d : out.diagnostics) {
    if (unordered_kind(d.kind)) unordered.insert(d.buffer);
    if (d.kind == diagnostic_kind::host_device_race) host_races.insert(d.buffer);
  }
  const auto buffer_at = [&](std::uint64_t address) -> std::string {
    for (const auto& [name, range] : out.buffer_addresses) {
      if (address >= range.first && address < range.first + range.second) return name;
    }
    return {};
  };
  std::set<std::string> reported;
  for (const auto& r : found) {
    std::string buffer;
    for (const auto a : r.addresses) {
      if (buffer.empty()) buffer = buffer_at(a);
    }
    if (buffer.empty()) {
      v.problems.push_back("a ThreadSanitizer report on memory that is no buffer of the scenario:\n" +
                           r.text);
      continue;
    }
    reported.insert(buffer);
    if (!unordered.count(buffer)) {
      v.problems.push_back("ThreadSanitizer reported a race on buffer " + buffer +
                           " that the engine considers ordered:\n" + r.text);
    }
  }
  for (const auto& b : host_races) {
    if (!reported.count(b)) v.missed.push_back(b);
  }
  for (const auto& p : out.problems) v.problems.push_back("replay: " + p);
  return v;
}

std::vector<harness::scenario> corpus_scenarios() {
  const char* root = std::getenv("STREAMSAN_SCENARIOS");
  if (root == nullptr) throw std::runtime_error("STREAMSAN_SCENARIOS is not set");
  const auto c = harness::corpus::load(harness::find_scenario_files({root}));
  if (!c.errors().empty()) throw std::runtime_error("the corpus does not load: " + c.errors().front());
  return c.scenarios();
}

}  // namespace streamsan::testing
