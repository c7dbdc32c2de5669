// Fuzz target: suppression files. Any text is either parsed into rules or
// refused with a suppression_error that names the line; every parsed rule's
// pattern can be matched against any name (the glob has no pathological
// case: matching is O(pattern * text)).
#include <string>

#include "sanitizer/report/suppressions.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace streamsan;
  const auto text = fuzz::as_text(data, size);
  // The first line doubles as a name to match: fuzzing the glob with
  // patterns and names that look alike.
  const auto newline = text.find('\n');
  const auto name = text.substr(0, newline == std::string_view::npos ? text.size() : newline);
  try {
    const auto rules = suppressions::parse(text, "fuzz.supp");
    for (const auto& rule : rules.rules()) {
      FUZZ_CHECK(!rule.pattern.empty());
      FUZZ_CHECK(rule.origin.starts_with("fuzz.supp:"));
      (void)suppression_pattern_matches(rule.pattern, name);
      (void)suppression_pattern_matches(rule.pattern, rule.pattern);
    }
  } catch (const suppression_error& e) {
    FUZZ_CHECK(std::string_view(e.what()).starts_with("fuzz.supp:"));
  }
  return 0;
}
