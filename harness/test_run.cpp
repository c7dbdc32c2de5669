#include "harness/test_run.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>

#include <nlohmann/json.hpp>

#include "harness/outcome_check.h"
#include "harness/process_pool.h"
#include "harness/replay.h"
#include "harness/result_json.h"
#include "harness/schedule_search.h"

namespace streamsan::harness {
namespace {

scenario_result blank_result(const scenario& s, const std::string& backend) {
  scenario_result r;
  r.name = s.name;
  r.file = s.file;
  r.backend = backend;
  for (const auto& rule : s.rules) r.rules.push_back(rule.id);
  r.expected_verdict = expected_verdict(s);
  return r;
}

// Note [Backends must agree]
// The engine's verdict comes from the happens-before order, which the
// backend does not change; values that a scenario checks do not depend on
// the backend either. So sim and cuda must see the same diagnostics and the
// same pass/fail; a difference means one backend models CUDA wrongly.
void compare_backends(std::vector<scenario_result*>& runs) {
  const scenario_result* first = nullptr;
  for (auto* r : runs) {
    if (r->status == result_status::skipped) continue;
    if (first == nullptr) {
      first = r;
      continue;
    }
    if (r->seen_diagnostics == first->seen_diagnostics && r->status == first->status) continue;
    auto list = [](const scenario_result& x) {
      std::string out;
      for (const auto& d : x.seen_diagnostics) out += (out.empty() ? "" : "; ") + d;
      return (out.empty() ? std::string("no diagnostics") : out) + " and " +
             (x.status == result_status::passed ? "passed" : "failed");
    };
    const std::string message = "scenario " + r->name + ": backends disagree: " + first->backend +
                                " saw " + list(*first) + ", " + r->backend + " saw " + list(*r);
    for (auto* x : runs) {
      if (x->status == result_status::skipped) continue;
      x->status = result_status::failed;
      x->failures.push_back(message);
    }
    return;
  }
}

}  // namespace

scenario_result run_scenario(const scenario& s, const corpus& c, const std::string& backend,
                             const test_settings& settings) {
  const auto started = std::chrono::steady_clock::now();
  scenario_result r = blank_result(s, backend);
  r.skip_reason = cannot_run(s, backend);
  if (!r.skip_reason.empty()) {
    r.status = result_status::skipped;
    return r;
  }
  try {
    const outcome seen = replay(s, {backend, false, 1});
    r.seen_verdict = seen_verdict(seen);
    for (const auto& d : seen.diagnostics) r.seen_diagnostics.push_back(describe(s, d));
    r.failures = check_outcome(s, seen);
    if (settings.schedules > 0 && backend == "sim") {
      r.schedules = search_schedules(s, c.twin_of(s), settings.schedules, r.failures);
      const bool expects_race = std::any_of(s.expect.diagnostics.begin(), s.expect.diagnostics.end(),
                                            [](const auto& d) { return is_race(d.kind); });
      if (settings.require_witness && expects_race && !r.schedules->first) {
        r.failures.push_back("scenario " + s.name + ": no seed of " +
                             std::to_string(settings.schedules) +
                             " produced a wrong value (no witness for the race)");
      }
    }
  } catch (const std::exception& e) {
    r.failures.push_back("scenario " + s.name + ": replay on " + backend + " failed: " + e.what());
  }
  r.status = r.failures.empty() ? result_status::passed : result_status::failed;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return r;
}

std::vector<std::string> worker_arguments(const scenario& s, const std::string& backend,
                                          const test_settings& settings) {
  std::vector<std::string> args{"test", "--worker", "--backend", backend, "--schedules",
                                std::to_string(settings.schedules)};
  if (settings.require_witness) args.push_back("--require-witness");
  // The worker must hold the file to the same level: a root given with
  // --strict has no marker to find again.
  if (s.level == scenario_level::corpus) {
    args.push_back("--strict-root");
    args.push_back(s.corpus_root.string());
  }
  args.push_back(s.file);
  return args;
}

std::vector<scenario_result> run_scenarios(const corpus& c,
                                           const std::vector<const scenario*>& selected,
                                           const test_settings& settings,
                                           const progress_callback& progress) {
  struct task {
    const scenario* s;
    std::string backend;
  };
  std::vector<task> tasks;
  for (const auto* s : selected) {
    for (const auto& b : settings.backends) tasks.push_back({s, b});
  }
  std::vector<scenario_result> results(tasks.size());
  std::size_t done = 0;
  if (settings.jobs <= 1 || tasks.size() <= 1 || settings.worker_executable.empty()) {
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      results[i] = run_scenario(*tasks[i].s, c, tasks[i].backend, settings);
      if (progress) progress(results[i], ++done, tasks.size());
    }
  } else {
    std::vector<std::vector<std::string>> args;
    for (const auto& t : tasks) args.push_back(worker_arguments(*t.s, t.backend, settings));
    run_processes(settings.worker_executable, args, settings.jobs, settings.worker_timeout_seconds,
                  [&](std::size_t i, process_result p) {
                    scenario_result r;
                    try {
                      if (p.exit_code != 0 || p.timed_out) throw std::runtime_error("");
                      r = result_from_json(nlohmann::json::parse(p.out));
                    } catch (const std::exception&) {
                      r = blank_result(*tasks[i].s, tasks[i].backend);
                      r.status = result_status::failed;
                      const auto tail = p.err.size() > 2000 ? p.err.substr(p.err.size() - 2000) : p.err;
                      r.failures.push_back("scenario " + tasks[i].s->name + ": the worker process ended with " +
                                           describe_end(p) + (tail.empty() ? "" : ": " + tail));
                      r.seconds = p.seconds;
                    }
                    results[i] = std::move(r);
                    if (progress) progress(results[i], ++done, tasks.size());
                  });
  }
  if (settings.backends.size() > 1) {
    for (std::size_t i = 0; i < results.size(); i += settings.backends.size()) {
      std::vector<scenario_result*> runs;
      for (std::size_t b = 0; b < settings.backends.size(); ++b) runs.push_back(&results[i + b]);
      compare_backends(runs);
    }
  }
  return results;
}

}  // namespace streamsan::harness
