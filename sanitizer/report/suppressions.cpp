#include "sanitizer/report/suppressions.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace streamsan {
namespace {

constexpr std::string_view called_from_lib = "called_from_lib";

// Note [Built-in library suppressions]
// NVIDIA's libraries order their own work with events, stream memory
// operations and internal streams that streamsan does not (yet) model, and
// query events before they record them; a report whose every operation a
// library issued is about the library's internals, which the program can
// neither see nor fix (issue #10: simpleCUBLAS). Matched by module file name
// (Note [Suppressions for calls from libraries]), so any install location and
// soname version is covered; a library linked statically into the program is
// not (its frames are the program's). cuDNN 9 is split into libcudnn_*.so,
// cuFFT ships libcufftw.so, cuSOLVER libcusolverMg.so: the patterns cover
// them.
struct builtin_library {
  std::string_view name;
  std::string_view pattern;
};
constexpr std::array<builtin_library, 8> builtin_libraries = {{
    {"cuBLAS", "^libcublas.so"},
    {"cuBLASLt", "^libcublasLt.so"},
    {"cuDNN", "^libcudnn"},
    {"cuFFT", "^libcufft"},
    {"cuSPARSE", "^libcusparse.so"},
    {"cuRAND", "^libcurand.so"},
    {"NCCL", "^libnccl.so"},
    {"cuSOLVER", "^libcusolver"},
}};

// Modules between a CUDA API call and the capture of its stack: never a
// call site. The injection library already drops their frames; stacks from
// other producers may still hold them.
constexpr std::array<std::string_view, 4> cuda_internal_modules = {
    "^libcuda.so", "^libcudart.so", "^libcupti.so", "^libstreamsan_inject"};

std::string_view file_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

bool is_category(std::string_view category) {
  if (category == "race" || category == "sync" || category == called_from_lib) return true;
  for (int i = 0; i < diagnostic_kind_count; ++i) {
    if (to_string(static_cast<diagnostic_kind>(i)) == category) return true;
  }
  return false;
}

bool applies_to(std::string_view category, diagnostic_kind kind) {
  if (category == called_from_lib) return false;  // matched by call site instead
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

namespace {

bool module_matches(std::string_view pattern, std::string_view module) {
  return suppression_pattern_matches(pattern, file_name(module)) ||
         suppression_pattern_matches(pattern, module);
}

// The module of the frame that called the CUDA API: the innermost frame not
// in CUDA itself or streamsan. Empty when unknown (no stack, or a frame
// without a module before it).
std::string_view call_site_module(const operation_ref& op, symbolizer& symbols) {
  for (const auto address : symbols.tables().stack(op.stack)) {
    const symbol_info& s = symbols.symbolize(address);
    if (s.module.empty()) return {};
    const bool internal = std::any_of(
        cuda_internal_modules.begin(), cuda_internal_modules.end(),
        [&](std::string_view pattern) { return module_matches(pattern, s.module); });
    if (!internal) return s.module;
  }
  return {};
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
           "' (expected race, sync, called_from_lib or a diagnostic kind such as "
           "stream-race)");
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

suppressions suppressions::builtin() {
  suppressions result;
  for (const auto& library : builtin_libraries) {
    result.rules_.push_back({std::string(called_from_lib), std::string(library.pattern),
                             "built-in (" + std::string(library.name) + ")", true});
  }
  return result;
}

void suppressions::append(const suppressions& more) {
  rules_.insert(rules_.end(), more.rules_.begin(), more.rules_.end());
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
        names.push_back(s.module);
      }
    };
    add_operation(d.current);
    if (d.previous) add_operation(*d.previous);
    if (d.allocation) names.push_back(tables.string(d.allocation->label));
    collected = true;
  };
  // Note [Suppressions for calls from libraries]: the current operation's
  // call site selects the rule, the previous one's must match some rule.
  std::optional<bool> previous_from_library;
  const auto previous_is_from_library = [&] {
    if (!previous_from_library) {
      const std::string_view module =
          d.previous ? call_site_module(*d.previous, symbols) : std::string_view{};
      previous_from_library =
          !d.previous || std::any_of(rules_.begin(), rules_.end(), [&](const auto& rule) {
            return rule.category == called_from_lib && module_matches(rule.pattern, module);
          });
    }
    return *previous_from_library;
  };
  std::optional<std::string_view> current_module;
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    const auto& rule = rules_[i];
    if (rule.category == called_from_lib) {
      if (!current_module) current_module = call_site_module(d.current, symbols);
      if (module_matches(rule.pattern, *current_module) && previous_is_from_library()) return i;
      continue;
    }
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
      if (rules.rules()[*rule].builtin) ++result.suppressed_builtin;
    } else {
      result.kept.push_back(d);
    }
  }
  return result;
}

void print_suppressions(std::ostream& out, const suppressions& rules,
                        std::span<const std::uint64_t> hits) {
  out << "streamsan: suppressions (hits, rule, origin):\n";
  if (rules.empty()) out << "  (none)\n";
  for (std::size_t i = 0; i < rules.rules().size(); ++i) {
    const auto& rule = rules.rules()[i];
    const std::string count = std::to_string(i < hits.size() ? hits[i] : 0);
    out << std::string(count.size() < 8 ? 8 - count.size() : 0, ' ') << count << "  "
        << rule.category << ':' << rule.pattern << "  " << rule.origin << '\n';
  }
}

}  // namespace streamsan
