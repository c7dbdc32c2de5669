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

}  // namespace

void print_text_diagnostic(std::ostream& out, const diagnostic& d, symbolizer& symbols,
                           const report_options& options) {
  const log_tables& tables = symbols.tables();
  out << rule;
  out << "WARNING: streamsan: " << headline(d, tables) << '\n';
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
      out << "  Conflicting bytes: [" << d.overlap_offset << ", "
          << d.overlap_offset + d.overlap_size << ") of " << to_string(a.id) << '\n';
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

void print_text_summary(std::ostream& out, const report_input& input, std::size_t printed) {
  const auto total = input.diagnostics.size();
  if (printed < total) out << "streamsan: … and " << total - printed << " more not printed\n";
  if (input.unmodelled_calls != nullptr && !input.unmodelled_calls->empty()) {
    out << "streamsan: unmodelled CUDA API calls:";
    const char* separator = " ";
    for (const auto& [name, count] : *input.unmodelled_calls) {
      out << separator << name << " (" << count << ")";
      separator = ", ";
    }
    out << '\n';
  }
  out << "streamsan: reported " << plural(total, "warning", "warnings");
  if (input.suppressed > 0) out << ", " << input.suppressed << " suppressed";
  if (input.suppressed_builtin > 0) {
    out << " (" << input.suppressed_builtin << " by built-in library suppressions)";
  }
  out << '\n';
}

void print_text_report(std::ostream& out, const report_input& input, symbolizer& symbols,
                       const report_options& options) {
  std::size_t printed = 0;
  for (const auto& d : input.diagnostics) {
    if (printed == options.print_limit) break;
    print_text_diagnostic(out, d, symbols, options);
    ++printed;
  }
  print_text_summary(out, input, printed);
}

}  // namespace streamsan
