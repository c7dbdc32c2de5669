#include "sanitizer/report/sarif_report.h"

#include <cctype>
#include <cstdio>

#include "sanitizer/report/cause_text.h"
#include "sanitizer/report/describe.h"
#include "sanitizer/report/fix_hint.h"
#include "sanitizer/report/kind_description.h"

namespace streamsan {
namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view source_root_id = "%SRCROOT%";

// RFC 3986: keep unreserved characters and '/', escape the rest.
std::string percent_encoded(std::string_view path) {
  std::string out;
  for (const char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out.push_back(c);
    } else {
      char buffer[4];
      std::snprintf(buffer, sizeof buffer, "%%%02X", u);
      out += buffer;
    }
  }
  return out;
}

json artifact_location(std::string_view file, const std::filesystem::path& root) {
  const std::string shown = display_path(file, root);
  const std::filesystem::path path(shown);
  if (!root.empty() && path.is_relative() && shown != file) {
    return {{"uri", percent_encoded(shown)}, {"uriBaseId", source_root_id}};
  }
  if (path.is_absolute()) return {{"uri", "file://" + percent_encoded(path.generic_string())}};
  return {{"uri", percent_encoded(path.generic_string())}};
}

json physical_location(const call_site& site, const std::filesystem::path& root) {
  json location = {{"artifactLocation", artifact_location(site.symbol->file, root)}};
  if (site.symbol->line != 0) location["region"] = {{"startLine", site.symbol->line}};
  return location;
}

// A location for the first frame of `stack` with a source file, if any;
// `op` (may be null) is the operation whose stack it is.
std::optional<json> source_location(stack_id stack, const operation_ref* op, symbolizer& symbols,
                                    const report_options& options, std::string message) {
  const auto site = find_call_site(stack, symbols, op);
  if (!site || !site->has_source()) return std::nullopt;
  json location = {{"physicalLocation", physical_location(*site, options.source_root)}};
  location["message"] = {{"text", std::move(message)}};
  return location;
}

json sarif_stack(stack_id stack, symbolizer& symbols, const report_options& options,
                 std::string message) {
  json frames = json::array();
  for (const auto address : symbols.tables().stack(stack)) {
    const symbol_info& s = symbols.symbolize(address);
    json location = {{"message", {{"text", describe_frame(address, s, options.source_root)}}}};
    if (!s.file.empty()) {
      location["physicalLocation"] = physical_location(call_site{address, &s}, options.source_root);
    }
    if (!s.function.empty()) location["logicalLocations"] = {{{"fullyQualifiedName", s.function}}};
    json frame = {{"location", std::move(location)}};
    if (!s.module.empty()) frame["module"] = s.module;
    frames.push_back(std::move(frame));
  }
  return {{"message", {{"text", std::move(message)}}}, {"frames", std::move(frames)}};
}

// FNV-1a: stable across runs, platforms and library versions.
class fingerprint {
 public:
  void add(std::string_view text) {
    for (const char c : text) mix(static_cast<unsigned char>(c));
    mix(0xff);  // separator: "ab"+"c" differs from "a"+"bc"
  }
  std::string hex() const {
    char buffer[20];
    std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash_));
    return buffer;
  }

 private:
  void mix(unsigned char byte) {
    hash_ ^= byte;
    hash_ *= 0x100000001b3ull;
  }
  std::uint64_t hash_ = 0xcbf29ce484222325ull;
};

// The call site of an operation, independent of addresses (ASLR) and of
// where the repository is checked out.
void add_call_site(fingerprint& f, const operation_ref& op, symbolizer& symbols,
                   const report_options& options) {
  f.add(to_string(op.op));
  f.add(symbols.tables().string(op.name));
  if (const auto site = find_call_site(op.stack, symbols, &op)) {
    f.add(site->symbol->function);
    f.add(display_path(site->symbol->file, options.source_root));
    f.add(std::to_string(site->symbol->line));
  }
}

json sarif_rules() {
  json rules = json::array();
  for (int i = 0; i < diagnostic_kind_count; ++i) {
    const auto kind = static_cast<diagnostic_kind>(i);
    const kind_description& k = describe(kind);
    rules.push_back({
        {"id", to_string(kind)},
        {"name", to_string(kind)},
        {"shortDescription", {{"text", k.short_text}}},
        {"fullDescription", {{"text", k.full_text}}},
        {"help", {{"text", k.help}}},
        {"defaultConfiguration", {{"level", k.level}}},
        {"properties", {{"tags", {"concurrency", "cuda", is_race(kind) ? "race" : "sync"}}}},
    });
  }
  return rules;
}

json side_properties(const operation_ref& op) {
  return {{"mode", to_string(op.mode)}, {"origin", to_string(op.origin)}};
}

// What SARIF has no place for: the certainty, each side's access kind and
// footprint origin, and the exact conflicting bytes.
json result_properties(const diagnostic& d) {
  json properties = json::object();
  properties["certainty"] = to_string(d.certainty);
  properties["current"] = side_properties(d.current);
  if (d.previous) properties["previous"] = side_properties(*d.previous);
  if (d.overlap_size > 0) {
    json ranges = json::array();
    for (const auto& r : conflict_ranges(d)) {
      ranges.push_back({{"offset", r.offset}, {"size", r.size}});
    }
    properties["conflict"] = {{"offset", d.overlap_offset},
                              {"size", d.overlap_size},
                              {"ranges", std::move(ranges)},
                              {"rangeCount", conflict_range_count(d)},
                              {"bytes", conflict_byte_count(d)}};
  }
  return properties;
}

json sarif_result(const diagnostic& d, symbolizer& symbols, const report_options& options) {
  const log_tables& tables = symbols.tables();
  const alloc_id shown = shown_allocation(d);
  const auto current = describe_access(d.current, tables, shown);
  const char* why_possible = inferred_sides(d).empty()
                                 ? " (relies on the DMA of a synchronous pageable upload having "
                                   "finished when cudaMemcpy returned, which the CUDA "
                                   "documentation does not guarantee). "
                                 : " (guessed footprint, not confirmed by a measurement; rerun "
                                   "with --precise). ";
  std::string message = is_candidate(d) ? "Possible " + headline(d, tables) + why_possible + current
                                        : headline(d, tables) + ". " + current;
  message += ".";
  if (d.previous) message += " " + describe_previous(*d.previous, tables, shown) + ".";
  if (const auto why = explanation(d)) message += " " + *why;
  const auto cause = cause_sentence(d, tables);
  if (cause) message += " Cause: " + *cause + ".";
  const auto fix = fix_hint(d, tables, options.vocabulary);
  if (!fix.empty()) message += " Fix: " + fix + ".";

  json result = json::object();
  result["ruleId"] = to_string(d.kind);
  result["ruleIndex"] = static_cast<int>(d.kind);
  // A candidate is no promise: a note, whatever its rule's level.
  result["level"] = is_candidate(d) ? std::string_view("note") : describe(d.kind).level;
  result["message"] = {{"text", message}};
  if (auto location = source_location(d.current.stack, &d.current, symbols, options, current)) {
    result["locations"] = json::array({std::move(*location)});
  }
  json related = json::array();
  if (d.previous) {
    const auto text = describe_previous(*d.previous, tables, shown);
    if (auto location = source_location(d.previous->stack, &*d.previous, symbols, options, text)) {
      (*location)["id"] = related.size() + 1;
      related.push_back(std::move(*location));
    }
  }
  if (cause && d.cause->kind != cause_kind::host_function_on_other_stream) {
    if (auto location = source_location(d.cause->call.stack, &d.cause->call, symbols, options,
                                        "Cause: " + *cause)) {
      (*location)["id"] = related.size() + 1;
      related.push_back(std::move(*location));
    }
  }
  if (d.allocation) {
    const auto text = "Allocation " + describe_allocation(*d.allocation, tables, true);
    if (auto location = source_location(d.allocation->site, nullptr, symbols, options, text)) {
      (*location)["id"] = related.size() + 1;
      related.push_back(std::move(*location));
    }
  }
  if (!related.empty()) result["relatedLocations"] = std::move(related);
  fingerprint f;
  f.add(to_string(d.kind));
  add_call_site(f, d.current, symbols, options);
  if (d.previous) add_call_site(f, *d.previous, symbols, options);
  result["partialFingerprints"] = {{"streamsanCallSites/v1", f.hex()}};
  result["occurrenceCount"] = d.count;
  result["stacks"] = json::array({sarif_stack(d.current.stack, symbols, options, current)});
  result["properties"] = result_properties(d);
  if (!fix.empty()) result["properties"]["fix"] = fix;
  return result;
}

json notification(std::string_view id, std::string_view level, std::string text) {
  return {{"descriptor", {{"id", id}}}, {"level", level}, {"message", {{"text", std::move(text)}}}};
}

std::string conflicts(std::uint64_t n) {
  return std::to_string(n) + (n == 1 ? " conflict" : " conflicts");
}

// What the run could not check, as the invocation's notifications: a viewer
// shows them beside the results, so a clean result says how clean it is
// (the text summary's "not checked" and "unmodelled" lines, the same data).
json sarif_invocation(const report_input& input, const report_options& options) {
  json notes = json::array();
  if (input.unmodelled_calls != nullptr) {
    for (const auto& [name, count] : *input.unmodelled_calls) {
      notes.push_back(notification(
          "unmodelled-call", "warning",
          name + " was called " + std::to_string(count) +
              (count == 1 ? " time" : " times") +
              "; streamsan does not model it, so what it orders or touches was not checked"));
    }
  }
  if (input.device_synchronized_conflicts > 0) {
    notes.push_back(notification(
        "device-synchronized-conflicts", "note",
        conflicts(input.device_synchronized_conflicts) +
            " between cooperative launches on different devices not checked: they may "
            "order their accesses on the device"));
  }
  if (input.host_ordered_conflicts > 0) {
    notes.push_back(notification(
        "host-ordered-conflicts", "note",
        conflicts(input.host_ordered_conflicts) +
            " not checked: a host thread had already seen the earlier access complete, and "
            "host threads may order the pair by means streamsan does not see"));
  }
  json invocation = {{"executionSuccessful", true}};
  // Note [Reports of several processes]: the sanitized process, when named.
  if (options.process) {
    invocation["processId"] = options.process->pid;
    invocation["commandLine"] = options.process->command;
  }
  if (!notes.empty()) invocation["toolExecutionNotifications"] = std::move(notes);
  return invocation;
}

}  // namespace

json sarif_report(const report_input& input, symbolizer& symbols, const report_options& options) {
  json results = json::array();
  for (const auto& d : input.diagnostics) results.push_back(sarif_result(d, symbols, options));
  json run = json::object();
  // No informationUri: it is optional, and the project has no public home
  // yet; an invented address would send people nowhere.
  run["tool"] = {{"driver", {{"name", "streamsan"}, {"rules", sarif_rules()}}}};
  if (!options.source_root.empty()) {
    auto root = options.source_root.generic_string();
    if (!root.ends_with('/')) root += '/';
    run["originalUriBaseIds"] = {{source_root_id, {{"uri", "file://" + percent_encoded(root)}}}};
  }
  run["invocations"] = json::array({sarif_invocation(input, options)});
  run["results"] = std::move(results);
  return {
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs", json::array({std::move(run)})},
  };
}

}  // namespace streamsan
