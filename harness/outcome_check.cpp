#include "harness/outcome_check.h"

#include <algorithm>
#include <cmath>
#include <charconv>
#include <set>

namespace streamsan::harness {
namespace {

std::string op_text(const scenario& s, std::size_t index) {
  if (index == setup_phase) return "the harness's setup (allocation and fill)";
  if (index == final_phase) return "the harness's final synchronize";
  if (index >= s.operations.size()) return "an operation the harness cannot name";
  return describe(s.operations[index]);
}

bool matches(const scenario& s, const expected_diagnostic& e, const seen_diagnostic& d) {
  if (e.kind != d.kind) return false;
  if (e.hazard_kind && *e.hazard_kind != d.hazard_kind) return false;
  if (!e.buffer.empty() && e.buffer != d.buffer) return false;
  if (!e.current.empty() && s.find_label(e.current) != d.current) return false;
  if (!e.previous.empty() && s.find_label(e.previous) != d.previous) return false;
  if (!e.event.empty() && e.event != d.event) return false;
  if (!e.stream.empty() && e.stream != d.stream) return false;
  return true;
}

struct checker {
  const scenario& s;
  const outcome& seen;
  bool values;
  std::vector<std::string> failures;

  void fail(const std::string& message) { failures.push_back("scenario " + s.name + ": " + message); }

  void diagnostics() {
    std::vector<bool> used(seen.diagnostics.size(), false);
    bool missing = false;
    for (const auto& e : s.expect.diagnostics) {
      bool found = false;
      for (std::size_t i = 0; i < seen.diagnostics.size() && !found; ++i) {
        if (!used[i] && matches(s, e, seen.diagnostics[i])) used[i] = found = true;
      }
      if (found) continue;
      missing = true;
      std::string saw;
      for (const auto& d : seen.diagnostics) saw += (saw.empty() ? "" : "; ") + describe(s, d);
      fail("expected " + describe(e) + ", saw " + (saw.empty() ? "none" : saw));
    }
    // After a missing expectation the message already lists everything seen.
    if (missing) return;
    for (std::size_t i = 0; i < seen.diagnostics.size(); ++i) {
      if (!used[i]) fail("unexpected " + describe(s, seen.diagnostics[i]));
    }
  }

  void buffers() {
    for (const auto& e : s.expect.buffers) {
      const auto it = seen.buffers.find(e.buffer);
      if (it == seen.buffers.end()) {
        fail("buffer " + e.buffer + " after final synchronize: expected " +
             format_values(e.values) + ", but it could not be read");
        continue;
      }
      const auto at = first_difference(e.values, it->second);
      if (at != no_operation) {
        fail("buffer " + e.buffer + " after final synchronize: expected " + format_values(e.values) +
             " saw " + format_values(it->second) + " at index " + std::to_string(at));
      }
    }
  }

  void results() {
    for (const auto& e : s.expect.results) {
      const std::size_t index = s.find_label(e.label);
      const auto it = seen.results.find(index);
      const std::string what = "result of '" + e.label + "' (" + op_name(s.operations[index].body) + ")";
      if (it == seen.results.end()) {
        fail(what + ": expected a result, but the operation gave none");
        continue;
      }
      if (const auto* b = std::get_if<bool>(&e.value)) {
        const auto* got = std::get_if<bool>(&it->second);
        if (got == nullptr || *got != *b) {
          fail(what + ": expected " + (*b ? "true" : "false") + " saw " +
               (got == nullptr ? "no answer" : *got ? "true" : "false"));
        }
      } else if (const auto* v = std::get_if<std::vector<float>>(&e.value)) {
        if (!values) continue;
        const auto* got = std::get_if<std::vector<float>>(&it->second);
        const std::vector<float> none;
        const auto at = first_difference(*v, got ? *got : none);
        if (at != no_operation) {
          fail(what + ": expected " + format_values(*v) + " saw " +
               format_values(got ? *got : none) + " at index " + std::to_string(at));
        }
      } else if (const auto* st = std::get_if<stat_values>(&e.value)) {
        const auto* got = std::get_if<stat_values>(&it->second);
        for (const auto& [name, value] : *st) {
          const auto g = got ? got->find(name) : stat_values::const_iterator{};
          if (got == nullptr || g == got->end()) {
            fail(what + ": " + name + " expected " + std::to_string(value) + " but it was not reported");
          } else if (g->second != value) {
            fail(what + ": " + name + " expected " + std::to_string(value) + " saw " +
                 std::to_string(g->second));
          }
        }
      }
    }
  }

  void messages(const std::vector<expected_error>& expected, const std::vector<seen_message>& got,
                std::string_view noun) {
    std::vector<bool> used(got.size(), false);
    for (const auto& e : expected) {
      const std::size_t index = s.find_label(e.label);
      bool found = false;
      std::string other;
      for (std::size_t i = 0; i < got.size() && !found; ++i) {
        if (got[i].operation != index) continue;
        if (got[i].message.find(e.message) != std::string::npos) {
          used[i] = found = true;
        } else {
          other = got[i].message;
        }
      }
      if (found) continue;
      fail("operation '" + e.label + "': expected " + std::string(noun) + " containing \"" +
           e.message + "\", " +
           (other.empty() ? "saw none" : "saw \"" + other + "\""));
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (used[i]) continue;
      // An operation with an expected message already failed above.
      const bool expected_here = std::any_of(expected.begin(), expected.end(), [&](const auto& e) {
        return s.find_label(e.label) == got[i].operation;
      });
      if (!expected_here) {
        fail("operation " + op_text(s, got[i].operation) + ": unexpected " + std::string(noun) +
             " \"" + got[i].message + "\"");
      }
    }
  }
};

}  // namespace

std::string format_number(float v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, end) : std::string("?");
}

std::string format_values(const std::vector<float>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += format_number(values[i]);
  }
  return out + "]";
}

std::size_t first_difference(const std::vector<float>& expected, const std::vector<float>& seen) {
  const std::size_t n = std::min(expected.size(), seen.size());
  for (std::size_t i = 0; i < n; ++i) {
    const double e = expected[i];
    const double g = seen[i];
    const bool same = e == g || (std::isfinite(g) && std::fabs(e - g) <= 1e-5 * std::max(1.0, std::fabs(e)));
    if (!same) return i;
  }
  return expected.size() == seen.size() ? no_operation : n;
}

std::string describe(const scenario& s, const seen_diagnostic& d) {
  std::string out(to_string(d.kind));
  if (d.hazard_kind != hazard::none) out += " (" + std::string(to_string(d.hazard_kind)) + ")";
  if (d.previous != no_operation) {
    out += " between " + op_text(s, d.current) + " and " + op_text(s, d.previous);
  } else {
    out += " at " + op_text(s, d.current);
  }
  if (!d.buffer.empty()) out += " on buffer " + d.buffer;
  if (!d.event.empty()) out += " on event " + d.event;
  if (!d.stream.empty()) out += " on stream " + d.stream;
  return out;
}

std::string describe(const expected_diagnostic& d) {
  std::string out(to_string(d.kind));
  if (d.hazard_kind) out += " (" + std::string(to_string(*d.hazard_kind)) + ")";
  if (!d.current.empty() && !d.previous.empty()) {
    out += " between '" + d.current + "' and '" + d.previous + "'";
  } else if (!d.current.empty()) {
    out += " at '" + d.current + "'";
  }
  if (!d.buffer.empty()) out += " on buffer " + d.buffer;
  if (!d.event.empty()) out += " on event " + d.event;
  if (!d.stream.empty()) out += " on stream " + d.stream;
  return out;
}

std::vector<std::string> check_outcome(const scenario& s, const outcome& seen, bool values) {
  checker c{s, seen, values, {}};
  for (const auto& p : seen.problems) c.fail(p);
  c.diagnostics();
  if (values) c.buffers();
  c.results();
  c.messages(s.expect.errors, seen.errors, "error");
  c.messages(s.expect.warnings, seen.warnings, "sync-debug warning");
  return std::move(c.failures);
}

namespace {

template <class Diagnostics>
std::string verdict_of(const Diagnostics& diagnostics) {
  std::set<std::string_view> kinds;
  for (const auto& d : diagnostics) kinds.insert(to_string(d.kind));
  std::string out;
  for (const auto k : kinds) out += (out.empty() ? "" : "+") + std::string(k);
  return out.empty() ? "clean" : out;
}

}  // namespace

std::string expected_verdict(const scenario& s) { return verdict_of(s.expect.diagnostics); }

std::string seen_verdict(const outcome& seen) { return verdict_of(seen.diagnostics); }

}  // namespace streamsan::harness
