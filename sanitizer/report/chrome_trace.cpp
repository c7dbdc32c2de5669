#include "sanitizer/report/chrome_trace.h"

#include "sanitizer/report/cause_text.h"
#include "sanitizer/report/describe.h"
#include "sanitizer/report/fix_hint.h"
#include "sanitizer/report/timeline_layout.h"

namespace streamsan {
namespace {

using json = nlohmann::ordered_json;

// Note [Issue order is not time]
constexpr std::uint64_t step_us = 10;
constexpr std::uint64_t slice_us = 8;

json stack_lines(const timeline_op& op, symbolizer& symbols, const report_options& options) {
  const operation_ref o = as_operation(op);
  json lines = json::array();
  const auto view = view_stack(op.stack, &o, symbols, options.stacks);
  for (std::size_t i = 0; i < view.lines.size(); ++i) {
    lines.push_back(describe_stack_line(i, view.lines[i], options.source_root));
  }
  return lines;
}

void add_race(json& events, const diagnostic& d, int pid, symbolizer& symbols,
              const report_options& options) {
  const race_timeline& t = *d.timeline;
  const log_tables& tables = symbols.tables();
  const timeline_layout layout = lay_out(t);
  events.push_back({{"ph", "M"}, {"pid", pid}, {"name", "process_name"},
                    {"args", {{"name", "#" + std::to_string(d.id) + " " + headline(d, tables)}}}});
  events.push_back({{"ph", "M"}, {"pid", pid}, {"name", "process_sort_index"},
                    {"args", {{"sort_index", pid}}}});
  for (std::size_t l = 0; l < layout.lanes.size(); ++l) {
    const int tid = static_cast<int>(l) + 1;
    events.push_back({{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_name"},
                      {"args", {{"name", layout.lanes[l].label}}}});
    events.push_back({{"ph", "M"}, {"pid", pid}, {"tid", tid}, {"name", "thread_sort_index"},
                      {"args", {{"sort_index", tid}}}});
  }
  const auto ts = [&](std::uint32_t i) { return std::uint64_t{layout.column[i]} * step_us; };
  const auto tid = [&](std::uint32_t i) { return static_cast<int>(layout.lane[i]) + 1; };
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    const timeline_op& op = t.ops[i];
    json args = {{"operation", timeline_title(op, tables)},
                 {"seq", op.seq},
                 {"stack", stack_lines(op, symbols, options)}};
    if (i == t.current) args["conflict"] = "current";
    if (i == t.previous) args["conflict"] = "previous";
    json slice = {{"ph", "X"},   {"pid", pid},
                  {"tid", tid(i)}, {"ts", ts(i)},
                  {"dur", slice_us}, {"name", timeline_label(op, tables)},
                  {"cat", std::string(to_string(op.op))}, {"args", std::move(args)}};
    // Reserved colour names of the trace viewers.
    if (i == t.current || i == t.previous) slice["cname"] = "terrible";
    events.push_back(std::move(slice));
  }
  int flow = 0;
  const auto arrow = [&](std::uint32_t from, std::uint32_t to, std::string name, std::string cat) {
    const int id = pid * 100000 + ++flow;
    events.push_back({{"ph", "s"}, {"pid", pid}, {"tid", tid(from)}, {"ts", ts(from) + slice_us / 2},
                      {"id", id}, {"name", name}, {"cat", cat}});
    events.push_back({{"ph", "f"}, {"bp", "e"}, {"pid", pid}, {"tid", tid(to)},
                      {"ts", ts(to) + slice_us / 2}, {"id", id}, {"name", name}, {"cat", cat}});
  };
  for (const timeline_edge& e : t.edges) {
    if (e.from >= t.ops.size() || e.to >= t.ops.size()) continue;
    arrow(e.from, e.to, std::string(to_string(e.kind)), "happens-before");
  }
  arrow(t.previous, t.current, "missing order", "missing");
}

}  // namespace

json chrome_trace(const report_input& input, symbolizer& symbols, const report_options& options) {
  json events = json::array();
  int pid = 0;
  json races = json::array();
  for (const diagnostic& d : input.diagnostics) {
    // Candidates are no warnings (Note [Candidates and confirmed diagnostics]).
    if (!d.timeline || is_candidate(d)) continue;
    add_race(events, d, ++pid, symbols, options);
    json race = {{"id", d.id}, {"kind", to_string(d.kind)}, {"message", headline(d, symbols.tables())}};
    if (const auto cause = cause_sentence(d, symbols.tables())) race["cause"] = *cause;
    if (const auto fix = fix_hint(d, symbols.tables(), options.vocabulary); !fix.empty()) {
      race["fix"] = fix;
    }
    races.push_back(std::move(race));
  }
  return {
      {"traceEvents", std::move(events)},
      {"displayTimeUnit", "ms"},
      {"otherData",
       {{"tool", "streamsan"},
        {"note", "timestamps are issue order (10 us per operation), not time"},
        {"warnings", confirmed_count(input.diagnostics)},
        {"possible_races", input.diagnostics.size() - confirmed_count(input.diagnostics)},
        {"races", std::move(races)}}},
  };
}

}  // namespace streamsan
