#include "sanitizer/report/text_report.h"

#include "sanitizer/report/describe.h"

namespace streamsan {
namespace {

constexpr std::string_view rule = "==================\n";

void print_stack(std::ostream& out, stack_id stack, symbolizer& symbols,
                 const report_options& options) {
  const auto frames = symbols.tables().stack(stack);
  if (frames.empty()) {
    out << "    (no stack recorded)\n";
    return;
  }
  for (std::size_t i = 0; i < frames.size(); ++i) {
    out << "    #" << i << ' '
        << describe_frame(frames[i], symbols.symbolize(frames[i]), options.source_root) << '\n';
  }
}

std::string plural(std::uint64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// "demo.cpp:42", else what describe_call_site says; "" without a stack.
std::string short_site(stack_id stack, symbolizer& symbols, const report_options& options) {
  const auto site = find_call_site(stack, symbols);
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
  if (const auto site = short_site(op.stack, symbols, options); !site.empty()) {
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
  out << "streamsan: possible races (guessed footprints, not confirmed by a measurement): "
      << candidates << '\n';
  std::size_t printed = 0;
  for (const auto& d : input.diagnostics) {
    if (!is_candidate(d)) continue;
    if (printed == options.print_limit) break;
    print_possible_race(out, d, symbols, options);
    ++printed;
  }
  if (printed < candidates) out << "  … and " << candidates - printed << " more\n";
  out << "streamsan: rerun with --precise to measure every launch\n";
}

void print_text_diagnostic(std::ostream& out, const diagnostic& d, symbolizer& symbols,
                           const report_options& options) {
  const log_tables& tables = symbols.tables();
  out << rule;
  if (is_candidate(d)) {
    // Not a warning (Note [Candidates and confirmed diagnostics]); front
    // ends list candidates with print_possible_races instead.
    out << "NOTE: streamsan: possible " << headline(d, tables)
        << " (guessed footprint, not confirmed by a measurement)\n";
  } else {
    out << "WARNING: streamsan: " << headline(d, tables) << '\n';
  }
  const alloc_id shown = shown_allocation(d);
  out << "  " << describe_access(d.current, tables, shown) << ":\n";
  print_stack(out, d.current.stack, symbols, options);
  if (d.previous) {
    out << "  " << describe_previous(*d.previous, tables, shown) << ":\n";
    print_stack(out, d.previous->stack, symbols, options);
  }
  if (const auto why = explanation(d)) out << "  " << *why << '\n';
  if (d.allocation) {
    const allocation_ref& a = *d.allocation;
    if (d.overlap_size > 0) {
      out << "  Conflicting bytes: " << describe_conflict_bytes(d) << '\n';
    }
    out << "  Allocation " << describe_allocation(a, tables, /*with_device=*/true)
        << " allocated at:\n";
    print_stack(out, a.site, symbols, options);
    // The free is shown unless it already is the previous operation.
    const bool free_shown = d.previous && d.previous->op == operation_kind::free;
    if (a.freed && !free_shown) {
      out << "  " << to_string(a.id) << " was freed at:\n";
      print_stack(out, a.free_site, symbols, options);
    }
  }
  if (d.count > 1) out << "  This report was seen " << d.count << " times.\n";
  out << "SUMMARY: streamsan: " << kind_and_hazard(d);
  if (const auto site = find_call_site(d.current.stack, symbols)) {
    out << ' ' << describe_call_site(*site, options.source_root);
  } else {
    out << " in " << describe_operation(d.current, tables);
  }
  out << '\n' << rule;
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
  out << "streamsan: reported " << plural(confirmed, "warning", "warnings");
  if (input.suppressed > 0) out << ", " << input.suppressed << " suppressed";
  if (candidates > 0) {
    out << "; " << plural(candidates, "possible race", "possible races") << " not confirmed";
  }
  out << '\n';
}

void print_text_report(std::ostream& out, const report_input& input, symbolizer& symbols,
                       const report_options& options) {
  std::size_t printed = 0;
  for (const auto& d : input.diagnostics) {
    if (is_candidate(d)) continue;
    if (printed == options.print_limit) break;
    print_text_diagnostic(out, d, symbols, options);
    ++printed;
  }
  print_text_summary(out, input, printed, symbols, options);
}

}  // namespace streamsan
