#include "sanitizer/report/text_report.h"

#include "sanitizer/report/cause_text.h"
#include "sanitizer/report/describe.h"
#include "sanitizer/report/fix_hint.h"

namespace streamsan {
namespace {

constexpr std::string_view rule = "==================\n";

// ANSI colours as ThreadSanitizer uses them: the warning red, accesses
// blue, locations green; causes yellow and fixes green. Off: all empty.
struct palette {
  std::string_view warning, access, location, cause, fix, reset;
};

palette colors(bool on) {
  if (!on) return {};
  return {"\033[1m\033[31m", "\033[1m\033[34m", "\033[1m\033[32m", "\033[1m\033[33m",
          "\033[32m", "\033[0m"};
}

// " in process 1234 (python3 train.py)" when the report names its process
// (Note [Reports of several processes]), else nothing.
std::string in_process(const report_options& options) {
  if (!options.process) return {};
  return " in process " + std::to_string(options.process->pid) + " (" +
         options.process->command + ")";
}

class text_printer {
 public:
  text_printer(std::ostream& out, symbolizer& symbols, const report_options& options)
      : out_(out), symbols_(symbols), options_(options), tables_(symbols.tables()),
        color_(colors(options.color)) {}

  void diagnostic_block(const diagnostic& d);

 private:
  void line(std::string_view color, const std::string& text) {
    out_ << "  " << color << text << (color.empty() ? "" : color_.reset) << '\n';
  }
  void stack(stack_id id, const operation_ref* op) {
    const auto view = view_stack(id, op, symbols_, options_.stacks);
    if (view.lines.empty()) {
      out_ << "    (no stack recorded)\n";
      return;
    }
    for (std::size_t i = 0; i < view.lines.size(); ++i) {
      out_ << "    " << describe_stack_line(i, view.lines[i], options_.source_root) << '\n';
    }
  }
  void cause(const diagnostic& d);
  void graph_gap(const diagnostic& d);
  void allocation(const diagnostic& d);
  void summary(const diagnostic& d);

  std::ostream& out_;
  symbolizer& symbols_;
  const report_options& options_;
  const log_tables& tables_;
  palette color_;
};

void text_printer::cause(const diagnostic& d) {
  const auto sentence = cause_sentence(d, tables_);
  if (!sentence) return;
  const ordering_cause& c = *d.cause;
  // A host function's launch is one of the two operations, already shown.
  const bool own_stack = c.kind != cause_kind::host_function_on_other_stream;
  line(color_.cause, "Cause: " + *sentence + (own_stack ? ":" : "."));
  if (own_stack) stack(c.call.stack, &c.call);
  if (c.record && c.kind != cause_kind::unrecorded_event) {
    line({}, to_string(c.event) + " was last recorded on " + to_string(c.record->stream) + " at:");
    stack(c.record->stack, &*c.record);
  }
  if (const auto reference = cause_reference(d)) line({}, *reference);
}

std::string node_list(const std::vector<graph_node_ref>& nodes, const log_tables& tables) {
  if (nodes.empty()) return "nothing";
  std::string text;
  for (const auto& n : nodes) {
    if (!text.empty()) text += ", ";
    text += "node " + std::to_string(n.index);
    if (const auto name = tables.string(n.name); !name.empty()) text += " '" + std::string(name) + "'";
  }
  return text;
}

void text_printer::graph_gap(const diagnostic& d) {
  if (!d.graph || !d.previous) return;
  const struct graph_gap& g = *d.graph;
  const operation_ref& a = *d.previous;
  const operation_ref& b = d.current;
  line({}, "Missing dependency: no path between node " + std::to_string(a.graph_node) + " and node " +
               std::to_string(b.graph_node) + " of " + to_string(b.graph) + " (" +
               std::to_string(g.node_count) + " nodes); they may run concurrently (S-GRAPH-2).");
  out_ << "    node " << a.graph_node << " depends on: " << node_list(g.previous_depends_on, tables_)
       << '\n';
  out_ << "    node " << b.graph_node << " depends on: " << node_list(g.current_depends_on, tables_)
       << '\n';
  line({}, to_string(b.graph) + " was instantiated at:");
  stack(g.instantiated, nullptr);
}

void text_printer::allocation(const diagnostic& d) {
  if (!d.allocation) return;
  const allocation_ref& a = *d.allocation;
  if (d.overlap_size > 0) {
    line({}, "Conflicting bytes: " + describe_conflict_bytes(d));
  }
  line(color_.location,
       "Allocation " + describe_allocation(a, tables_, /*with_device=*/true) + " allocated at:");
  stack(a.site, nullptr);
  // The free is shown unless it already is the previous operation.
  const bool free_shown = d.previous && d.previous->op == operation_kind::free;
  if (a.freed && !free_shown) {
    line(color_.location, to_string(a.id) + " was freed at:");
    stack(a.free_site, nullptr);
  }
}

void text_printer::summary(const diagnostic& d) {
  out_ << "SUMMARY: streamsan: " << kind_and_hazard(d);
  if (const auto site = find_call_site(d.current.stack, symbols_, &d.current)) {
    out_ << ' ' << describe_call_site(*site, options_.source_root);
  } else {
    out_ << " in " << describe_operation(d.current, tables_);
  }
  out_ << '\n';
}

void text_printer::diagnostic_block(const diagnostic& d) {
  out_ << rule;
  if (is_candidate(d)) {
    // Not a warning (Note [Candidates and confirmed diagnostics]); front
    // ends list candidates with print_possible_races instead.
    out_ << "NOTE: streamsan: possible " << headline(d, tables_)
         << " (guessed footprint, not confirmed by a measurement)" << in_process(options_)
         << '\n';
  } else {
    out_ << color_.warning << "WARNING: streamsan: " << headline(d, tables_)
         << in_process(options_) << (color_.warning.empty() ? "" : color_.reset) << '\n';
  }
  const alloc_id shown = shown_allocation(d);
  line(color_.access, describe_access(d.current, tables_, shown) + ":");
  stack(d.current.stack, &d.current);
  if (d.previous) {
    line(color_.access, describe_previous(*d.previous, tables_, shown) + ":");
    stack(d.previous->stack, &*d.previous);
  }
  cause(d);
  if (const auto why = explanation(d)) line({}, *why);
  graph_gap(d);
  allocation(d);
  if (const auto prevented = prevented_sentence(d)) line({}, *prevented);
  if (d.count > 1) line({}, "This report was seen " + std::to_string(d.count) + " times.");
  if (const auto fix = fix_hint(d, tables_, options_.vocabulary); !fix.empty()) {
    line(color_.fix, "Fix: " + fix);
  }
  summary(d);
  out_ << rule;
}

std::string plural(std::uint64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// "demo.cpp:42", else what describe_call_site says; "" without a stack.
std::string short_site(const operation_ref& op, symbolizer& symbols,
                       const report_options& options) {
  const auto site = find_call_site(op.stack, symbols, &op);
  if (!site) return {};
  if (!site->has_source()) return describe_call_site(*site, options.source_root);
  std::string text = display_path(site->symbol->file, options.source_root);
  if (site->symbol->line != 0) text += ":" + std::to_string(site->symbol->line);
  return text;
}

// "kernel 'sum' on stream#2 (thread#1) at demo.cpp:42 (read, inferred footprint)".
std::string side_of_possible_race(const operation_ref& op, symbolizer& symbols,
                                  const report_options& options) {
  std::string text = describe_operation(op, symbols.tables());
  if (const auto site = short_site(op, symbols, options); !site.empty()) {
    text += " at " + site;
  }
  if (accesses_memory(op.op)) {
    text += " (" + access_kind(op.mode);
    if (op.origin != access_origin::exact) {
      text += ", " + std::string(to_string(op.origin)) + " footprint";
    }
    text += ")";
  }
  return text;
}

// Two lines: what and where, then the two operations.
void print_possible_race(std::ostream& out, const diagnostic& d, symbolizer& symbols,
                         const report_options& options) {
  const log_tables& tables = symbols.tables();
  out << "  " << kind_and_hazard(d);
  const std::uint64_t conflicting = conflict_byte_count(d);
  const std::uint64_t ranges = conflict_range_count(d);
  if (conflicting > 0) out << ", " << plural(conflicting, "byte", "bytes");
  if (ranges > 1) out << " in " << ranges << " ranges";
  if (d.allocation) {
    out << " of " << to_string(d.allocation->id);
    if (const auto label = tables.string(d.allocation->label); !label.empty()) {
      out << " '" << label << "'";
    }
  }
  if (conflicting > 0) out << (ranges > 1 ? ": " : " at ") << describe_ranges(d);
  if (d.count > 1) out << ", seen " << d.count << " times";
  out << ":\n    " << side_of_possible_race(d.current, symbols, options);
  if (d.previous) out << " after " << side_of_possible_race(*d.previous, symbols, options);
  out << '\n';
}

}  // namespace

void print_possible_races(std::ostream& out, const report_input& input, symbolizer& symbols,
                          const report_options& options) {
  const std::size_t candidates = input.diagnostics.size() - confirmed_count(input.diagnostics);
  if (candidates == 0) return;
  bool guessed = false, staged = false;
  for (const auto& d : input.diagnostics) {
    if (!is_candidate(d)) continue;
    (inferred_sides(d).empty() ? staged : guessed) = true;
  }
  out << "streamsan: possible races ("
      << (staged ? (guessed ? "guessed footprints, or the DMA of a synchronous pageable upload; "
                            : "the DMA of a synchronous pageable upload; ")
                 : "guessed footprints, ")
      << "not confirmed by a measurement): " << candidates << '\n';
  std::size_t printed = 0;
  for (const auto& d : input.diagnostics) {
    if (!is_candidate(d)) continue;
    if (printed == options.print_limit) break;
    print_possible_race(out, d, symbols, options);
    ++printed;
  }
  if (printed < candidates) out << "  … and " << candidates - printed << " more\n";
  if (guessed) out << "streamsan: rerun with --precise to measure every launch\n";
  if (staged) {
    out << "streamsan: a synchronous cudaMemcpy from pageable memory may return before its DMA "
           "has finished (S-COPY-1); order the later use with a stream or event synchronize, "
           "or upload from pinned memory\n";
  }
}


void print_text_diagnostic(std::ostream& out, const diagnostic& d, symbolizer& symbols,
                           const report_options& options) {
  text_printer(out, symbols, options).diagnostic_block(d);
}

void print_text_summary(std::ostream& out, const report_input& input, std::size_t printed,
                        symbolizer& symbols, const report_options& options) {
  const std::size_t confirmed = confirmed_count(input.diagnostics);
  const std::size_t candidates = input.diagnostics.size() - confirmed;
  if (printed < confirmed) out << "streamsan: … and " << confirmed - printed << " more not printed\n";
  print_possible_races(out, input, symbols, options);
  if (input.unmodelled_calls != nullptr && !input.unmodelled_calls->empty()) {
    out << "streamsan: unmodelled CUDA API calls:";
    const char* separator = " ";
    for (const auto& [name, count] : *input.unmodelled_calls) {
      out << separator << name << " (" << count << ")";
      separator = ", ";
    }
    out << '\n';
  }
  if (input.device_synchronized_conflicts > 0) {
    out << "streamsan: not checked: "
        << plural(input.device_synchronized_conflicts, "conflict", "conflicts")
        << " between cooperative launches on different devices, which may order their "
           "accesses on the device (Note [Kernels that synchronize on the device])\n";
  }
  if (input.host_ordered_conflicts > 0) {
    out << "streamsan: not checked: "
        << plural(input.host_ordered_conflicts, "conflict", "conflicts")
        << " whose earlier access a host thread had already seen complete, which host threads "
           "may order among themselves (Note [Host threads order what the log does not show])\n";
  }
  out << "streamsan: reported " << plural(confirmed, "warning", "warnings") << in_process(options);
  if (input.suppressed > 0) out << ", " << input.suppressed << " suppressed";
  if (input.suppressed_builtin > 0) {
    out << " (" << input.suppressed_builtin << " by built-in library suppressions)";
  }
  if (candidates > 0) {
    out << "; " << plural(candidates, "possible race", "possible races") << " not confirmed";
  }
  out << '\n';
}

void print_text_report(std::ostream& out, const report_input& input, symbolizer& symbols,
                       const report_options& options) {
  text_printer printer(out, symbols, options);
  std::size_t printed = 0;
  for (const auto& d : input.diagnostics) {
    if (is_candidate(d)) continue;
    if (printed == options.print_limit) break;
    printer.diagnostic_block(d);
    ++printed;
  }
  print_text_summary(out, input, printed, symbols, options);
}

}  // namespace streamsan
