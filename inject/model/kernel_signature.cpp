#include "inject/model/kernel_signature.h"

#include <cxxabi.h>

#include <array>
#include <cstdlib>
#include <memory>

namespace streamsan::injection {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Strips `suffix` when it ends `s` as a whole word (or is punctuation).
bool strip_suffix(std::string_view& s, std::string_view suffix) {
  if (s.size() < suffix.size() || s.substr(s.size() - suffix.size()) != suffix) return false;
  const std::size_t before = s.size() - suffix.size();
  if (before > 0 && is_identifier_char(suffix.front()) && is_identifier_char(s[before - 1])) {
    return false;
  }
  s.remove_suffix(suffix.size());
  s = trim(s);
  return true;
}

// Strips `prefix` when it starts `s` as a whole word.
bool strip_prefix(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) == prefix &&
      (s.size() == prefix.size() || !is_identifier_char(s[prefix.size()]))) {
    s.remove_prefix(prefix.size());
    s = trim(s);
    return true;
  }
  return false;
}

// Built-in arithmetic types as the demangler spells them.
// (unsigned long long is a wide_integer.)
constexpr std::array<std::string_view, 26> arithmetic_types = {
    "bool", "char", "signed char", "unsigned char", "wchar_t", "char8_t", "char16_t",
    "char32_t", "short", "unsigned short", "int", "unsigned int", "long", "unsigned long",
    "long long", "__int128", "unsigned __int128", "float", "double",
    "long double", "__half", "half", "__nv_bfloat16", "_Float16", "__bf16", "std::nullptr_t"};

}  // namespace

std::optional<std::string> demangle(std::string_view mangled) {
  if (mangled.substr(0, 2) != "_Z") return std::nullopt;
  const std::string copy(mangled);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(
      abi::__cxa_demangle(copy.c_str(), nullptr, nullptr, &status), &std::free);
  if (status != 0 || !out) return std::nullopt;
  return std::string(out.get());
}

std::optional<std::vector<std::string>> parameter_types(std::string_view demangled) {
  // The parameter list is the parenthesized group that closes the name
  // (after it may come only cv/ref qualifiers of member functions).
  std::string_view s = trim(demangled);
  while (strip_suffix(s, "const") || strip_suffix(s, "volatile") || strip_suffix(s, "&&") ||
         strip_suffix(s, "&")) {
  }
  if (s.empty() || s.back() != ')') return std::nullopt;
  int depth = 0;
  std::size_t open = std::string_view::npos;
  for (std::size_t i = s.size(); i-- > 0;) {
    const char c = s[i];
    if (c == ')' || c == '>' || c == ']') ++depth;
    if (c == '(' || c == '<' || c == '[') --depth;
    if (depth == 0) {
      open = i;
      break;
    }
  }
  if (open == std::string_view::npos || s[open] != '(') return std::nullopt;
  const std::string_view list = s.substr(open + 1, s.size() - open - 2);
  std::vector<std::string> types;
  if (trim(list).empty() || trim(list) == "void") return types;
  depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '(' || c == '<' || c == '[') ++depth;
    if (c == ')' || c == '>' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      types.emplace_back(trim(list.substr(start, i - start)));
      start = i + 1;
    }
  }
  return types;
}

param_class classify_parameter(std::string_view type) {
  std::string_view t = trim(type);
  // Qualifiers of the parameter itself do not change what it points to.
  while (strip_suffix(t, "__restrict__") || strip_suffix(t, "__restrict") ||
         strip_suffix(t, "restrict") || strip_suffix(t, "const") ||
         strip_suffix(t, "volatile")) {
  }
  if (!t.empty() && t.back() == '*') {
    t.remove_suffix(1);
    t = trim(t);
    // The pointee: "float const" (demangler style) or "const float".
    std::string_view pointee = t;
    bool is_const = false;
    while (true) {
      if (strip_suffix(pointee, "const")) {
        is_const = true;
      } else if (!strip_suffix(pointee, "volatile") && !strip_suffix(pointee, "__restrict__")) {
        break;
      }
    }
    if (!is_const && strip_prefix(pointee, "const")) is_const = true;
    return is_const ? param_class::pointer_to_const : param_class::pointer;
  }
  while (strip_prefix(t, "const") || strip_prefix(t, "volatile")) {
  }
  if (t == "unsigned long long") return param_class::wide_integer;
  for (const auto a : arithmetic_types) {
    if (t == a) return param_class::scalar;
  }
  return param_class::unknown;
}

kernel_signature parse_kernel_signature(std::string_view mangled_name) {
  kernel_signature sig;
  const auto demangled = demangle(mangled_name);
  if (!demangled) {
    sig.name = mangled_name;
    return sig;
  }
  sig.name = *demangled;
  if (const auto types = parameter_types(*demangled)) {
    sig.has_types = true;
    sig.params.reserve(types->size());
    for (const auto& t : *types) sig.params.push_back(classify_parameter(t));
  }
  return sig;
}

}  // namespace streamsan::injection
