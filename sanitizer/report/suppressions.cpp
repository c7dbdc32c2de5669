#include "sanitizer/report/suppressions.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace streamsan {
namespace {

std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

bool is_category(std::string_view category) {
  if (category == "race" || category == "sync") return true;
  for (int i = 0; i < diagnostic_kind_count; ++i) {
    if (to_string(static_cast<diagnostic_kind>(i)) == category) return true;
  }
  return false;
}

bool applies_to(std::string_view category, diagnostic_kind kind) {
  if (category == "race") return is_race(kind);
  if (category == "sync") return !is_race(kind);
  return category == to_string(kind);
}

// '*' globbing with backtracking to the last star: O(n * m) at worst.
bool glob_matches(std::string_view pattern, std::string_view text) noexcept {
  std::size_t p = 0, t = 0;
  std::size_t star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

bool suppression_pattern_matches(std::string_view pattern, std::string_view text) noexcept {
  if (text.empty()) return false;
  const bool anchored_start = pattern.starts_with('^');
  if (anchored_start) pattern.remove_prefix(1);
  const bool anchored_end = pattern.ends_with('$');
  if (anchored_end) pattern.remove_suffix(1);
  // Unanchored ends match anywhere: an implicit '*'.
  std::string glob;
  if (!anchored_start) glob += '*';
  glob += pattern;
  if (!anchored_end) glob += '*';
  return glob_matches(glob, text);
}

suppressions suppressions::parse(std::string_view text, std::string_view source_name) {
  suppressions result;
  std::size_t line_number = 0;
  for (std::size_t pos = 0; pos <= text.size();) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const auto line = trimmed(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_number;
    if (line.empty() || line.starts_with('#')) continue;

    const std::string origin = std::string(source_name) + ":" + std::to_string(line_number);
    const auto fail = [&](const std::string& cause) {
      throw suppression_error(origin + ": " + cause);
    };
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) {
      fail("expected TYPE:PATTERN (e.g. race:my_kernel), got '" + std::string(line) + "'");
    }
    const auto category = trimmed(line.substr(0, colon));
    const auto pattern = trimmed(line.substr(colon + 1));
    if (!is_category(category)) {
      fail("unknown suppression type '" + std::string(category) +
           "' (expected race, sync or a diagnostic kind such as stream-race)");
    }
    if (pattern.empty()) fail("empty pattern after '" + std::string(category) + ":'");
    if (pattern.find('^', 1) != std::string_view::npos) fail("'^' may only begin a pattern");
    const auto dollar = pattern.find('$');
    if (dollar != std::string_view::npos && dollar + 1 != pattern.size()) {
      fail("'$' may only end a pattern");
    }
    if (pattern == "^" || pattern == "$" || pattern == "^$") {
      fail("pattern '" + std::string(pattern) + "' matches nothing");
    }
    result.rules_.push_back({std::string(category), std::string(pattern), origin});
  }
  return result;
}

suppressions suppressions::load(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw suppression_error(path.string() + ": cannot read suppressions file: " +
                            std::strerror(errno));
  }
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return parse(text, path.string());
}

std::optional<std::size_t> suppressions::match(const diagnostic& d, symbolizer& symbols) const {
  // The names a rule is matched against; frames are symbolized only when a
  // rule of the right category exists.
  std::vector<std::string_view> names;
  bool collected = false;
  const auto collect = [&] {
    const log_tables& tables = symbols.tables();
    const auto add_operation = [&](const operation_ref& op) {
      names.push_back(tables.string(op.name));
      for (const auto address : tables.stack(op.stack)) {
        const symbol_info& s = symbols.symbolize(address);
        names.push_back(s.function);
        names.push_back(s.file);
      }
    };
    add_operation(d.current);
    if (d.previous) add_operation(*d.previous);
    if (d.allocation) names.push_back(tables.string(d.allocation->label));
    collected = true;
  };
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    const auto& rule = rules_[i];
    if (!applies_to(rule.category, d.kind)) continue;
    if (!collected) collect();
    for (const auto name : names) {
      if (suppression_pattern_matches(rule.pattern, name)) return i;
    }
  }
  return std::nullopt;
}

suppression_result apply_suppressions(std::span<const diagnostic> diagnostics,
                                      const suppressions& rules, symbolizer& symbols) {
  suppression_result result;
  result.hits.assign(rules.rules().size(), 0);
  for (const auto& d : diagnostics) {
    if (const auto rule = rules.match(d, symbols)) {
      ++result.hits[*rule];
      ++result.suppressed;
    } else {
      result.kept.push_back(d);
    }
  }
  return result;
}

}  // namespace streamsan
