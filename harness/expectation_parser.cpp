// The `expect:` section. Everything it names must exist: labels, buffers,
// statistics, diagnostic kinds.
#include <algorithm>
#include <array>

#include "harness/nearest_name.h"
#include "harness/parse_context.h"
#include "harness/scenario_error.h"
#include "harness/stat_catalog.h"

namespace streamsan::harness::detail {
namespace {

constexpr std::array<diagnostic_kind, diagnostic_kind_count> all_kinds{
    diagnostic_kind::stream_race,        diagnostic_kind::host_device_race,
    diagnostic_kind::graph_node_race,    diagnostic_kind::free_while_in_use,
    diagnostic_kind::use_after_free,     diagnostic_kind::use_before_alloc,
    diagnostic_kind::unrecorded_event,   diagnostic_kind::destroyed_stream_use,
    diagnostic_kind::destroyed_event_use, diagnostic_kind::sync_during_capture,
    diagnostic_kind::event_device_mismatch,
};

diagnostic_kind parse_kind(const yaml_value& v) {
  const std::string text = v.text();
  std::vector<std::string_view> names;
  for (const auto k : all_kinds) {
    if (to_string(k) == text) return k;
    names.push_back(to_string(k));
  }
  v.fail("unknown diagnostic kind '" + text + "'" + hint_or_expected(text, names, join_choices(names)));
}

hazard parse_hazard(const yaml_value& v) {
  const std::string s = v.one_of({"read-after-write", "write-after-read", "write-after-write"});
  if (s == "read-after-write") return hazard::read_after_write;
  if (s == "write-after-read") return hazard::write_after_read;
  return hazard::write_after_write;
}

// The label must name an operation; returns its index.
std::size_t check_label(const parse_context& ctx, const yaml_value& v, const std::string& label) {
  const auto index = ctx.result.find_label(label);
  if (index == std::string::npos) {
    std::string labels;
    std::vector<std::string> names;
    for (const auto& op : ctx.result.operations) {
      if (!op.label.empty()) labels += (labels.empty() ? "" : ", ") + op.label;
      if (!op.label.empty()) names.push_back(op.label);
    }
    const std::string hint = did_you_mean(label, names);
    v.fail("unknown operation label '" + label + "' in " + v.what() + "; " +
           (hint.empty() ? "" : hint + " ") +
           (labels.empty() ? std::string("no operation has a label") : "labels: " + labels));
  }
  return index;
}

void parse_diagnostics(parse_context& ctx, const yaml_value& v) {
  if (v.is_scalar() && v.node().Scalar() == "none") return;
  if (!v.is_sequence()) {
    v.fail("expected 'none' or a list of diagnostics for " + v.what());
  }
  const auto items = v.items();
  // A corpus spells "no diagnostics" one way; elsewhere [] means none too.
  if (items.empty() && ctx.result.level == scenario_level::corpus) {
    v.fail("expected 'none' rather than an empty list for " + v.what() +
           " (a corpus scenario spells no diagnostics as 'none')");
  }
  for (const auto& item : items) {
    const yaml_map m(item, {"kind", "hazard", "buffer", "current", "previous", "event", "stream"});
    expected_diagnostic d;
    d.kind = parse_kind(m.get("kind"));
    d.where = m.where();
    if (is_race(d.kind) && d.kind != diagnostic_kind::use_after_free &&
        d.kind != diagnostic_kind::use_before_alloc && d.kind != diagnostic_kind::free_while_in_use) {
      // A race test must say which race: both sides and the hazard.
      for (const auto key : {"hazard", "buffer", "current", "previous"}) m.get(key);
    }
    if (const auto h = m.find("hazard")) d.hazard_kind = parse_hazard(*h);
    if (const auto b = m.find("buffer")) {
      d.buffer = b->text();
      ctx.check_buffer(*b, d.buffer);
    }
    if (const auto c = m.find("current")) {
      d.current = c->text();
      check_label(ctx, *c, d.current);
    }
    if (const auto p = m.find("previous")) {
      d.previous = p->text();
      check_label(ctx, *p, d.previous);
    }
    if (const auto e = m.find("event")) {
      d.event = e->text();
      ctx.check_event(*e, d.event);
    }
    if (const auto s = m.find("stream")) {
      d.stream = s->text();
      ctx.check_stream(*s, d.stream);
    }
    ctx.result.expect.diagnostics.push_back(std::move(d));
  }
}

bool is_freed(const scenario& s, const std::string& buffer) {
  for (const auto& op : s.operations) {
    if (const auto* f = std::get_if<free_op>(&op.body); f != nullptr && f->buffer == buffer) {
      return true;
    }
  }
  return false;
}

std::vector<float> element_values(const yaml_value& v, std::uint64_t count) {
  const auto numbers = v.numbers();
  if (numbers.size() != 1 && numbers.size() != count) {
    v.fail("expected one value or " + std::to_string(count) + " values for " + v.what() +
           ", got " + std::to_string(numbers.size()));
  }
  std::vector<float> out(count, static_cast<float>(numbers.front()));
  if (numbers.size() == count) std::copy(numbers.begin(), numbers.end(), out.begin());
  return out;
}

}  // namespace

void parse_expectation(parse_context& ctx, const yaml_value& value) {
  const yaml_map m(value, {"diagnostics", "buffers", "results", "errors", "warnings"});
  parse_diagnostics(ctx, m.get("diagnostics"));

  if (const auto b = m.find("buffers")) {
    if (!b->is_map()) b->fail("expected a mapping from buffer names to values for " + b->what());
    for (auto it = b->node().begin(); it != b->node().end(); ++it) {
      const yaml_value name_v(it->first, ctx.file, "a buffer name in " + b->what());
      const std::string name = name_v.text();
      const buffer_decl& decl = ctx.check_buffer(name_v, name);
      if (is_freed(ctx.result, name)) {
        name_v.fail("buffer " + name + " is freed by the scenario; its contents after the final "
                    "synchronize cannot be checked");
      }
      const yaml_value values(it->second, ctx.file, "the contents of buffer " + name);
      ctx.result.expect.buffers.push_back({name, element_values(values, decl.size), name_v.where()});
    }
  }

  if (const auto r = m.find("results")) {
    if (!r->is_map()) r->fail("expected a mapping from operation labels to results for " + r->what());
    for (auto it = r->node().begin(); it != r->node().end(); ++it) {
      const yaml_value label_v(it->first, ctx.file, "a label in " + r->what());
      const std::string label = label_v.text();
      const operation& op = ctx.result.operations[check_label(ctx, label_v, label)];
      const yaml_value value(it->second, ctx.file, "the result of '" + label + "'");
      expected_result er{label, false, label_v.where()};
      if (std::holds_alternative<query_op>(op.body)) {
        er.value = value.boolean();
      } else if (const auto* read = std::get_if<host_read_op>(&op.body)) {
        er.value = element_values(value, read->src.end - read->src.begin);
      } else if (std::holds_alternative<memory_stats_op>(op.body)) {
        stat_values stats;
        const yaml_map sm(value.node(), value.file(), value.what(), known_stat_names());
        for (const auto& key : sm.keys()) stats[key] = sm.get(key).integer();
        if (stats.empty()) value.fail("expected at least one statistic for " + value.what());
        er.value = std::move(stats);
      } else {
        label_v.fail("operation '" + label + "' (" + op_name(op.body) +
                     ") has no result to check; results exist for query, host_read and "
                     "memory_stats");
      }
      ctx.result.expect.results.push_back(std::move(er));
    }
  }

  // A race makes values depend on the schedule: they belong in the twin.
  const bool racy = std::any_of(ctx.result.expect.diagnostics.begin(),
                                ctx.result.expect.diagnostics.end(),
                                [](const auto& d) { return is_race(d.kind); });
  if (racy) {
    if (const auto b = m.find("buffers")) {
      b->fail("a scenario that expects a race cannot expect buffer contents: they depend on the "
              "schedule (the fixed twin states them)");
    }
    for (const auto& r : ctx.result.expect.results) {
      if (std::holds_alternative<std::vector<float>>(r.value)) {
        throw scenario_error(r.where, "a scenario that expects a race cannot expect what host "
                                      "read '" + r.label + "' sees: it depends on the schedule "
                                      "(the fixed twin states it)");
      }
    }
  }

  for (const auto key : {"errors", "warnings"}) {
    const auto list = m.find(key);
    if (!list) continue;
    for (const auto& item : list->items()) {
      const yaml_map em(item, {"at", "message"});
      const yaml_value at = em.get("at");
      expected_error e{at.text(), em.text("message"), em.where()};
      check_label(ctx, at, e.label);
      (std::string_view(key) == "errors" ? ctx.result.expect.errors : ctx.result.expect.warnings)
          .push_back(std::move(e));
    }
  }
}

}  // namespace streamsan::harness::detail
