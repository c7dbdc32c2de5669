#include "sanitizer/report/json_report.h"

#include "sanitizer/report/describe.h"

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

json json_diagnostic(const diagnostic& d, symbolizer& symbols, const report_options& options) {
  const log_tables& tables = symbols.tables();
  json j = json::object();
  j["kind"] = to_string(d.kind);
  j["category"] = is_race(d.kind) ? "race" : "sync";
  j["hazard"] = d.hazard_kind == hazard::none ? json(nullptr) : json(to_string(d.hazard_kind));
  j["count"] = d.count;
  j["message"] = headline(d, tables);
  if (const auto why = explanation(d)) j["explanation"] = *why;
  const alloc_id shown = shown_allocation(d);
  j["current"] = json_operation(d.current, shown, symbols, options);
  j["previous"] =
      d.previous ? json_operation(*d.previous, shown, symbols, options) : json(nullptr);
  j["allocation"] = d.allocation ? json_allocation(*d.allocation, symbols, options) : json(nullptr);
  j["overlap"] = d.overlap_size == 0
                     ? json(nullptr)
                     : json{{"offset", d.overlap_offset}, {"size", d.overlap_size}};
  j["event"] = is_none(d.event) ? json(nullptr) : json(raw(d.event));
  j["stream"] = is_none(d.stream) ? json(nullptr) : json(raw(d.stream));
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
    frames.push_back(std::move(frame));
  }
  return frames;
}

json json_report(const report_input& input, symbolizer& symbols, const report_options& options) {
  json diagnostics = json::array();
  json by_kind = json::object();
  std::uint64_t occurrences = 0;
  for (const auto& d : input.diagnostics) {
    diagnostics.push_back(json_diagnostic(d, symbols, options));
    const std::string kind(to_string(d.kind));
    by_kind[kind] = by_kind.value(kind, 0) + 1;
    occurrences += d.count;
  }
  json unmodelled = json::object();
  if (input.unmodelled_calls != nullptr) {
    for (const auto& [name, count] : *input.unmodelled_calls) unmodelled[name] = count;
  }
  json report = json::object();
  report["tool"] = "streamsan";
  report["diagnostics"] = std::move(diagnostics);
  report["summary"] = {
      {"warnings", input.diagnostics.size()},
      {"occurrences", occurrences},
      {"suppressed", input.suppressed},
      {"suppressed_builtin", input.suppressed_builtin},
      {"by_kind", std::move(by_kind)},
      {"unmodelled_calls", std::move(unmodelled)},
      {"records_processed", input.records_processed},
  };
  return report;
}

}  // namespace streamsan
