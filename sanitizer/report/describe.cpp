#include "sanitizer/report/describe.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace streamsan {
namespace {

std::string quoted(std::string_view name) { return "'" + std::string(name) + "'"; }

std::string capitalized(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

std::string bytes(std::uint64_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

std::string module_and_offset(const symbol_info& symbol) {
  const auto name = std::filesystem::path(symbol.module).filename().string();
  return "(" + name + "+" + hex(symbol.module_offset) + ")";
}

// " (measured footprint)", " (inferred footprint)", or "" for an exact
// extent (the API's own, a declared access, an annotation).
std::string footprint_note(access_origin origin) {
  if (origin == access_origin::exact) return {};
  return " (" + std::string(to_string(origin)) + " footprint)";
}

}  // namespace

bool accesses_memory(operation_kind op) noexcept {
  switch (op) {
    case operation_kind::kernel:
    case operation_kind::memcpy:
    case operation_kind::staged_upload:
    case operation_kind::memset:
    case operation_kind::host_func:
    case operation_kind::host_access:
    case operation_kind::graph_node:
      return true;
    case operation_kind::alloc:
    case operation_kind::free:
    case operation_kind::event_record:
    case operation_kind::event_wait:
    case operation_kind::event_synchronize:
    case operation_kind::event_query:
    case operation_kind::stream_synchronize:
    case operation_kind::stream_query:
    case operation_kind::stream_wait_stream:
    case operation_kind::device_synchronize:
    case operation_kind::stream_destroy:
    case operation_kind::event_destroy:
    case operation_kind::graph_launch:
      return false;
  }
  return false;
}

std::string hex(std::uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

std::string describe_allocation(const allocation_ref& a, const log_tables& tables,
                                bool with_device) {
  std::string text = to_string(a.id);
  if (const auto label = tables.string(a.label); !label.empty()) text += " " + quoted(label);
  text += " (" + std::string(to_string(a.kind)) + " memory, " + bytes(a.size);
  if (with_device) text += ", device " + std::to_string(a.device);
  return text + ")";
}

// Still too long with its template arguments elided: the parameter list
// carries the length (torch's distribution kernels take lambdas whose
// types spell out whole function signatures), so it goes too: "k<…>(…)".
// The list is the balanced group that ends the name; parameters that fit
// in two limits stay (they tell overloads apart).
std::string elide_parameters_if_long(std::string name) {
  if (name.size() <= 2 * short_name_limit || name.back() != ')') return name;
  int depth = 0;
  for (std::size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++depth;
    if (name[i] == '(' && --depth == 0) return name.substr(0, i) + "(\u2026)";
  }
  return name;
}

namespace {

bool is_identifier_char(char c) noexcept {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Note [CCCL's ABI namespaces]
// Thrust, CUB and libcu++ put everything in inline namespaces that encode
// the library version and the architectures compiled for
// (cub::CUB_300001_SM_750_900::, thrust::THRUST_300001_SM_750_900_NS::,
// cuda::std::__4::). They are in every demangled name of those libraries'
// kernels, and tell the user nothing the name without them does not:
// cub::DeviceReduceKernel is what they would write. Reports drop them
// where they shorten a name; JSON keeps the full one.
bool is_abi_namespace(std::string_view id) noexcept {
  const auto versioned = [&](std::string_view prefix) {
    return id.size() > prefix.size() && id.starts_with(prefix) &&
           std::isdigit(static_cast<unsigned char>(id[prefix.size()])) != 0;
  };
  if (versioned("CUB_") || versioned("THRUST_")) return true;
  return id.size() > 2 && id.starts_with("__") &&
         std::all_of(id.begin() + 2, id.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

}  // namespace

std::string without_abi_namespaces(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (std::size_t i = 0; i < name.size();) {
    if (!is_identifier_char(name[i]) || (i > 0 && is_identifier_char(name[i - 1]))) {
      out += name[i++];
      continue;
    }
    std::size_t end = i;
    while (end < name.size() && is_identifier_char(name[end])) ++end;
    const std::string_view id = name.substr(i, end - i);
    if (name.substr(end, 2) == "::" && is_abi_namespace(id)) {
      i = end + 2;
    } else {
      out += id;
      i = end;
    }
  }
  return out;
}

std::string short_kernel_name(std::string_view full_name) {
  const std::string stripped = without_abi_namespaces(full_name);
  std::string_view name = stripped;
  // Every kernel returns void; a template instance's name says so.
  if (name.substr(0, 5) == "void ") name.remove_prefix(5);
  if (name.size() <= short_name_limit) return std::string(name);
  std::string out;
  out.reserve(name.size());
  int depth = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    // "operator<", "operator<<" and "operator->" are names, not brackets.
    if (c == 'o' && depth == 0 && name.substr(i).starts_with("operator")) {
      std::size_t end = i + 8;
      while (end < name.size() && std::string_view("<>=-!+*/%&|^~[]").find(name[end]) !=
                                      std::string_view::npos) {
        ++end;
      }
      out += name.substr(i, end - i);
      i = end - 1;
      continue;
    }
    if (c == '<') {
      if (depth++ == 0) out += "<\u2026";
      continue;
    }
    if (c == '>' && depth > 0) {
      if (--depth == 0) out += '>';
      continue;
    }
    if (depth == 0) out += c;
  }
  return elide_parameters_if_long(std::move(out));
}

std::string shown_name(const operation_ref& op, std::string_view name) {
  const bool kernel = op.op == operation_kind::kernel || op.op == operation_kind::graph_node;
  return kernel ? short_kernel_name(name) : std::string(name);
}

std::string describe_operation(const operation_ref& op, const log_tables& tables) {
  std::string text(to_string(op.op));
  if (const auto name = tables.string(op.name); !name.empty()) {
    text += " " + quoted(std::string_view(shown_name(op, name)));
  }
  if (op.op == operation_kind::graph_node) {
    text += " (node " + std::to_string(op.graph_node) + " of " + to_string(op.graph) + ")";
  }
  switch (op.context) {
    case context_kind::stream:
      // A graph node of an instantiated graph runs on no stream yet.
      if (op.op == operation_kind::graph_node && is_none(op.stream)) {
        text += " (" + to_string(op.thread) + ")";
        break;
      }
      text += " on " + to_string(op.stream) + " (" + to_string(op.thread) + ")";
      break;
    case context_kind::host_thread:
      text += " on " + to_string(op.thread);
      break;
  }
  return text;
}

std::string access_kind(access_mode mode) {
  std::string text(to_string(mode));
  if (is_atomic(mode)) text += " access";
  return text;
}

std::string describe_access(const operation_ref& op, const log_tables& tables,
                            alloc_id shown) {
  std::string text;
  // A launch reported before its accesses were seen (on a destroyed
  // stream, say) has no range to describe.
  if (accesses_memory(op.op) && (op.size > 0 || !is_none(op.alloc))) {
    text = capitalized(access_kind(op.mode)) + " of " + bytes(op.size) + " at offset " +
           std::to_string(op.offset);
    if (!is_none(op.alloc) && op.alloc != shown) text += " of " + to_string(op.alloc);
    text += footprint_note(op.origin);
    text += " by " + describe_operation(op, tables);
  } else {
    text = capitalized(describe_operation(op, tables));
  }
  if (const auto range = tables.string(op.nvtx_range); !range.empty()) {
    text += " in range " + std::string(range);
  }
  return text;
}

alloc_id shown_allocation(const diagnostic& d) noexcept {
  return d.allocation ? d.allocation->id : alloc_id{};
}

std::string describe_previous(const operation_ref& op, const log_tables& tables,
                              alloc_id shown) {
  std::string text = describe_access(op, tables, shown);
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return "Previous " + text;
}

std::string describe_ranges(const diagnostic& d) {
  const auto ranges = conflict_ranges(d);
  std::string text;
  for (const auto& r : ranges) {
    if (!text.empty()) text += ", ";
    text += "[" + std::to_string(r.offset) + ", " + std::to_string(r.offset + r.size) + ")";
  }
  if (conflict_range_count(d) > ranges.size()) text += ", …";
  return text;
}

std::string describe_conflict_bytes(const diagnostic& d) {
  const std::uint64_t count = conflict_range_count(d);
  std::string text = describe_ranges(d);
  if (const alloc_id shown = shown_allocation(d); !is_none(shown)) text += " of " + to_string(shown);
  if (count > conflict_ranges(d).size()) {
    text += " (" + std::to_string(count) + " ranges, " + bytes(conflict_byte_count(d)) + ")";
  } else if (count > 1) {
    text += " (" + bytes(conflict_byte_count(d)) + ")";
  }
  return text;
}

std::string kind_and_hazard(const diagnostic& d) {
  std::string text(to_string(d.kind));
  if (d.hazard_kind != hazard::none) text += " (" + std::string(to_string(d.hazard_kind)) + ")";
  return text;
}

std::string headline(const diagnostic& d, const log_tables& tables) {
  std::string object;
  switch (d.kind) {
    case diagnostic_kind::stream_race:
    case diagnostic_kind::host_device_race:
    case diagnostic_kind::graph_node_race:
    case diagnostic_kind::free_while_in_use:
    case diagnostic_kind::use_after_free:
    case diagnostic_kind::use_before_alloc:
      object = d.allocation ? describe_allocation(*d.allocation, tables) : "untracked memory";
      break;
    case diagnostic_kind::unrecorded_event:
    case diagnostic_kind::destroyed_event_use:
    case diagnostic_kind::event_device_mismatch:
      object = to_string(d.event);
      break;
    case diagnostic_kind::destroyed_stream_use:
    case diagnostic_kind::sync_during_capture:
      object = to_string(d.stream);
      break;
  }
  return kind_and_hazard(d) + " on " + object;
}

std::optional<std::string> explanation(const diagnostic& d) {
  switch (d.kind) {
    case diagnostic_kind::stream_race:
    case diagnostic_kind::host_device_race:
    case diagnostic_kind::graph_node_race:
    case diagnostic_kind::use_after_free:
      return std::nullopt;  // the two stacks and the allocation say it all
    case diagnostic_kind::free_while_in_use:
      return "The memory is freed while the previous operation may still use it (S-MEM-5).";
    case diagnostic_kind::use_before_alloc:
      if (d.previous && d.previous->op == operation_kind::graph_node) {
        // Note [Graph allocations]
        return "The access is not ordered after the graph's allocation node that makes the "
               "memory: it exists only from the node on, each time the graph runs (S-MEM-5).";
      }
      return "The access is not ordered after the stream-ordered allocation (S-MEM-5).";
    case diagnostic_kind::unrecorded_event:
      return to_string(d.event) + " was never recorded, so this orders nothing (S-EVENT-3).";
    case diagnostic_kind::destroyed_stream_use:
      return to_string(d.stream) + " was destroyed before this use (S-STREAM-9).";
    case diagnostic_kind::destroyed_event_use:
      return to_string(d.event) + " was destroyed before this use.";
    case diagnostic_kind::sync_during_capture:
      return to_string(d.stream) +
             " is capturing a graph; synchronizing during capture is illegal (S-GRAPH-1).";
    case diagnostic_kind::event_device_mismatch:
      return to_string(d.event) +
             " is recorded on a stream of another device; only streams of the event's device "
             "may record it (S-EVENT-6).";
  }
  return std::nullopt;
}

std::string display_path(std::string_view file, const std::filesystem::path& root) {
  if (root.empty() || file.empty()) return std::string(file);
  const std::filesystem::path path(file);
  const auto relative = path.lexically_relative(root);
  if (relative.empty() || *relative.begin() == "..") return std::string(file);
  return relative.generic_string();
}

std::string describe_frame(std::uint64_t address, const symbol_info& symbol,
                           const std::filesystem::path& root) {
  std::string text = symbol.function.empty() ? hex(address) : symbol.function;
  if (!symbol.file.empty()) {
    text += " " + display_path(symbol.file, root);
    if (symbol.line != 0) text += ":" + std::to_string(symbol.line);
  } else if (!symbol.module.empty()) {
    text += " " + module_and_offset(symbol);
  }
  return text;
}

std::string describe_call_site(const call_site& site, const std::filesystem::path& root) {
  const symbol_info& s = *site.symbol;
  if (!s.file.empty()) {
    std::string text = display_path(s.file, root);
    if (s.line != 0) text += ":" + std::to_string(s.line);
    if (!s.function.empty()) text += " in " + s.function;
    return text;
  }
  if (!s.function.empty()) return "in " + s.function;
  if (!s.module.empty()) return module_and_offset(s);
  return hex(site.address);
}

}  // namespace streamsan
