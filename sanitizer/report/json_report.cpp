#include "sanitizer/report/json_report.h"

#include "sanitizer/report/cause_text.h"
#include "sanitizer/report/describe.h"
#include "sanitizer/report/fix_hint.h"

namespace streamsan {
namespace {

using json = nlohmann::ordered_json;

json text_or_null(std::string_view text) {
  return text.empty() ? json(nullptr) : json(std::string(text));
}

json json_operation(const operation_ref& op, alloc_id shown, symbolizer& symbols,
                    const report_options& options) {
  const log_tables& tables = symbols.tables();
  json j = json::object();
  j["seq"] = op.seq;
  j["operation"] = to_string(op.op);
  switch (op.context) {
    case context_kind::stream:
      j["context"] = "stream";
      j["stream"] = raw(op.stream);
      break;
    case context_kind::host_thread:
      j["context"] = "host_thread";
      break;
  }
  j["thread"] = raw(op.thread);
  j["name"] = text_or_null(tables.string(op.name));
  j["mode"] = to_string(op.mode);
  j["origin"] = to_string(op.origin);
  j["alloc"] = is_none(op.alloc) ? json(nullptr) : json(raw(op.alloc));
  j["offset"] = op.offset;
  j["size"] = op.size;
  j["nvtx_range"] = text_or_null(tables.string(op.nvtx_range));
  if (op.op == operation_kind::graph_node) {
    j["graph"] = raw(op.graph);
    j["graph_node"] = op.graph_node;
  }
  j["description"] = describe_access(op, tables, shown);
  j["stack"] = json_stack(op.stack, symbols, options);
  return j;
}

json json_allocation(const allocation_ref& a, symbolizer& symbols, const report_options& options) {
  json j = json::object();
  j["id"] = raw(a.id);
  j["label"] = text_or_null(symbols.tables().string(a.label));
  j["memory"] = to_string(a.kind);
  j["device"] = a.device;
  j["size"] = a.size;
  j["address"] = hex(a.address);
  j["alloc_seq"] = a.alloc_seq;
  j["site"] = json_stack(a.site, symbols, options);
  j["freed"] = a.freed;
  if (a.freed) j["free_site"] = json_stack(a.free_site, symbols, options);
  return j;
}

// The hull, the listed ranges, and how many ranges and bytes there are.
json json_overlap(const diagnostic& d) {
  json ranges = json::array();
  for (const auto& r : conflict_ranges(d)) ranges.push_back({{"offset", r.offset}, {"size", r.size}});
  json j = json::object();
  j["offset"] = d.overlap_offset;
  j["size"] = d.overlap_size;
  j["ranges"] = std::move(ranges);
  j["range_count"] = conflict_range_count(d);
  j["bytes"] = conflict_byte_count(d);
  return j;
}

json id_or_null(std::uint32_t value) { return value == 0 ? json(nullptr) : json(value); }

template <class Id>
json raw_or_null(Id id) {
  return is_none(id) ? json(nullptr) : json(raw(id));
}

// Note [Causes]
json json_cause(const diagnostic& d, symbolizer& symbols, const report_options& options) {
  if (!d.cause) return nullptr;
  const ordering_cause& c = *d.cause;
  json j = json::object();
  j["kind"] = to_string(c.kind);
  j["message"] = cause_sentence(d, symbols.tables()).value_or("");
  j["call"] = json_operation(c.call, {}, symbols, options);
  j["event"] = raw_or_null(c.event);
  j["stream"] = raw_or_null(c.named);
  j["record"] = c.record ? json_operation(*c.record, {}, symbols, options) : json(nullptr);
  j["reported_as"] = id_or_null(c.reported_as);
  return j;
}

json json_nodes(const std::vector<graph_node_ref>& nodes, const log_tables& tables) {
  json out = json::array();
  for (const auto& n : nodes) out.push_back({{"node", n.index}, {"name", text_or_null(tables.string(n.name))}});
  return out;
}

json json_graph_gap(const diagnostic& d, symbolizer& symbols, const report_options& options) {
  if (!d.graph || !d.previous) return nullptr;
  const graph_gap& g = *d.graph;
  const log_tables& tables = symbols.tables();
  return {
      {"graph", raw(d.current.graph)},
      {"node_count", g.node_count},
      {"missing_edge", {{"from", d.previous->graph_node}, {"to", d.current.graph_node}}},
      {"previous_depends_on", json_nodes(g.previous_depends_on, tables)},
      {"current_depends_on", json_nodes(g.current_depends_on, tables)},
      {"instantiated_at", json_stack(g.instantiated, symbols, options)},
  };
}

std::string lane_of(const timeline_op& op) {
  return op.context == context_kind::stream ? to_string(op.stream) : to_string(op.thread);
}

}  // namespace

// Note [Race timelines]
json json_timeline(const race_timeline& t, symbolizer& symbols, const report_options& options) {
  const log_tables& tables = symbols.tables();
  json ops = json::array();
  for (const timeline_op& op : t.ops) {
    json o = json::object();
    o["seq"] = op.seq;
    o["operation"] = to_string(op.op);
    o["lane"] = t.graph ? json(nullptr) : json(lane_of(op));
    o["thread"] = raw(op.thread);
    o["name"] = text_or_null(tables.string(op.name));
    o["event"] = raw_or_null(op.event);
    o["target"] = raw_or_null(op.target);
    if (op.op == operation_kind::graph_node) o["graph_node"] = op.graph_node;
    if (op.not_ready) o["not_ready"] = true;
    o["stack"] = json_stack(op.stack, symbols, options);
    ops.push_back(std::move(o));
  }
  json edges = json::array();
  for (const timeline_edge& e : t.edges) {
    edges.push_back({{"from", e.from}, {"to", e.to}, {"kind", to_string(e.kind)}});
  }
  return {
      {"graph", t.graph},
      {"ops", std::move(ops)},
      {"edges", std::move(edges)},
      {"missing_edge", {{"from", t.previous}, {"to", t.current}}},
      {"omitted", t.omitted},
      {"previous_outside_window", t.previous_outside_window},
  };
}

namespace {

json json_diagnostic(const diagnostic& d, symbolizer& symbols, const report_options& options) {
  const log_tables& tables = symbols.tables();
  json j = json::object();
  j["id"] = d.id;
  j["kind"] = to_string(d.kind);
  j["category"] = is_race(d.kind) ? "race" : "sync";
  j["certainty"] = to_string(d.certainty);
  j["hazard"] = d.hazard_kind == hazard::none ? json(nullptr) : json(to_string(d.hazard_kind));
  j["count"] = d.count;
  j["message"] = headline(d, tables);
  if (const auto why = explanation(d)) j["explanation"] = *why;
  const alloc_id shown = shown_allocation(d);
  j["current"] = json_operation(d.current, shown, symbols, options);
  j["previous"] =
      d.previous ? json_operation(*d.previous, shown, symbols, options) : json(nullptr);
  j["allocation"] = d.allocation ? json_allocation(*d.allocation, symbols, options) : json(nullptr);
  j["overlap"] = d.overlap_size == 0 ? json(nullptr) : json_overlap(d);
  j["event"] = is_none(d.event) ? json(nullptr) : json(raw(d.event));
  j["stream"] = is_none(d.stream) ? json(nullptr) : json(raw(d.stream));
  j["cause"] = json_cause(d, symbols, options);
  j["failed_to_prevent"] = d.failed_to_prevent;
  j["graph"] = json_graph_gap(d, symbols, options);
  const auto fix = fix_hint(d, tables, options.vocabulary);
  j["fix"] = text_or_null(fix);
  j["timeline"] = d.timeline ? json_timeline(*d.timeline, symbols, options) : json(nullptr);
  return j;
}

}  // namespace

json json_stack(stack_id stack, symbolizer& symbols, const report_options& options) {
  json frames = json::array();
  for (const auto address : symbols.tables().stack(stack)) {
    const symbol_info& s = symbols.symbolize(address);
    json frame = json::object();
    frame["address"] = hex(address);
    frame["function"] = text_or_null(s.function);
    frame["file"] = s.file.empty() ? json(nullptr) : json(display_path(s.file, options.source_root));
    frame["line"] = s.line == 0 ? json(nullptr) : json(s.line);
    frame["module"] = text_or_null(s.module);
    frame["module_offset"] = s.module.empty() ? json(nullptr) : json(hex(s.module_offset));
    frame["kind"] = to_string(classify_frame(s));
    frames.push_back(std::move(frame));
  }
  return frames;
}

json json_report(const report_input& input, symbolizer& symbols, const report_options& options) {
  json diagnostics = json::array();
  json possible_races = json::array();
  json by_kind = json::object();
  std::uint64_t occurrences = 0;
  for (const auto& d : input.diagnostics) {
    if (is_candidate(d)) {
      possible_races.push_back(json_diagnostic(d, symbols, options));
      continue;
    }
    diagnostics.push_back(json_diagnostic(d, symbols, options));
    const std::string kind(to_string(d.kind));
    by_kind[kind] = by_kind.value(kind, 0) + 1;
    occurrences += d.count;
  }
  json unmodelled = json::object();
  if (input.unmodelled_calls != nullptr) {
    for (const auto& [name, count] : *input.unmodelled_calls) unmodelled[name] = count;
  }
  json summary = {
      {"warnings", diagnostics.size()},
      {"occurrences", occurrences},
      {"possible_races", possible_races.size()},
      {"suppressed", input.suppressed},
      {"suppressed_builtin", input.suppressed_builtin},
      {"device_synchronized_conflicts", input.device_synchronized_conflicts},
      {"host_ordered_conflicts", input.host_ordered_conflicts},
      {"by_kind", std::move(by_kind)},
      {"unmodelled_calls", std::move(unmodelled)},
      {"records_processed", input.records_processed},
  };
  json report = json::object();
  report["tool"] = "streamsan";
  report["diagnostics"] = std::move(diagnostics);
  report["possible_races"] = std::move(possible_races);
  report["summary"] = std::move(summary);
  // Note [Reports of several processes]: null for the program `streamsan
  // run` started.
  report["process"] = options.process ? json{{"pid", options.process->pid},
                                             {"command", options.process->command}}
                                      : json(nullptr);
  return report;
}

}  // namespace streamsan
