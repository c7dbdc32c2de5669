// Fuzz target: suppression files. Any text is either parsed into rules or
// refused with a suppression_error that names the line. The parsed rules,
// followed by the built-in ones, are matched against a diagnostic whose
// names, frames and modules come from the input's first line, so that
// patterns and names that look alike meet: matching must end, quickly (the
// glob is O(pattern * text)), whatever the pattern.
#include <string>

#include "sanitizer/log/log_tables.h"
#include "sanitizer/report/suppressions.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

using namespace streamsan;

// A race between two operations named `name`, whose stacks are a frame in
// a module named `name` called from the program, and a frame of a library.
diagnostic diagnostic_named(log_tables& tables, std::string_view name, std::size_t size) {
  tables.define_string(string_id{1}, name);
  static constexpr std::uint64_t frames[] = {0x1000, 0x2000, 0x3000};
  tables.define_stack(stack_id{1}, frames);
  tables.define_symbol(0x1000, {std::string(name), std::string(name), 1, std::string(name), 0});
  tables.define_symbol(0x2000, {"cublasSgemm", "gemm.cpp", 2, "/usr/lib/libcublas.so.13", 16});
  tables.define_symbol(0x3000, {"main", "main.cpp", 3, "/usr/bin/app", 32});
  diagnostic d;
  d.kind = static_cast<diagnostic_kind>(size % diagnostic_kind_count);
  d.current.name = string_id{1};
  d.current.stack = stack_id{1};
  d.previous = d.current;
  d.allocation = allocation_ref{};
  d.allocation->label = string_id{1};
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = fuzz::as_text(data, size);
  const auto newline = text.find('\n');
  const auto name = text.substr(0, newline == std::string_view::npos ? text.size() : newline);
  suppressions rules;
  try {
    rules = suppressions::parse(text, "fuzz.supp");
  } catch (const suppression_error& e) {
    FUZZ_CHECK(std::string_view(e.what()).starts_with("fuzz.supp:"));
    return 0;
  }
  for (const auto& rule : rules.rules()) {
    FUZZ_CHECK(!rule.pattern.empty());
    FUZZ_CHECK(rule.origin.starts_with("fuzz.supp:"));
    (void)suppression_pattern_matches(rule.pattern, rule.pattern);
  }
  rules.append(suppressions::builtin());
  log_tables tables;
  const diagnostic d = diagnostic_named(tables, name, size);
  symbolizer symbols(tables, symbol_source::log_only);
  const auto hit = rules.match(d, symbols);
  FUZZ_CHECK(!hit || *hit < rules.rules().size());
  return 0;
}
