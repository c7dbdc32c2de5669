#include "harness/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "harness/nearest_name.h"
#include "harness/scenario_error.h"

namespace streamsan::harness {
namespace {

std::string describe_node(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
  }
  return "nothing";
}

}  // namespace

source_mark mark_of(const YAML::Mark& mark, const std::string& file) {
  // yaml-cpp counts from 0; a null mark (-1) has no position.
  if (mark.line < 0) return {file, 0, 0};
  return {file, mark.line + 1, mark.column + 1};
}

source_mark mark_of(const YAML::Node& node, const std::string& file) {
  return mark_of(node.Mark(), file);
}

std::string join_choices(std::span<const std::string_view> choices) {
  std::string out;
  std::size_t i = 0;
  for (const auto c : choices) {
    if (i > 0) out += (i + 1 == choices.size()) ? " or " : ", ";
    out += c;
    ++i;
  }
  return out;
}

namespace {

std::string with_hint(const std::string& hint, const std::string& expected) {
  return hint.empty() ? "; expected " + expected : "; " + hint + " (expected " + expected + ")";
}

}  // namespace

std::string hint_or_expected(std::string_view typed, std::span<const std::string_view> valid,
                             const std::string& expected) {
  return with_hint(did_you_mean(typed, valid), expected);
}

std::string hint_or_expected(std::string_view typed, const std::vector<std::string>& valid,
                             const std::string& expected) {
  return with_hint(did_you_mean(typed, valid), expected);
}

// ---- yaml_value ----

yaml_value::yaml_value(YAML::Node node, const std::string& file, std::string what)
    : node_(std::move(node)), file_(file), what_(std::move(what)) {}

void yaml_value::fail(const std::string& message) const { throw scenario_error(where(), message); }

std::string yaml_value::text() const {
  if (!node_.IsScalar() || node_.Scalar().empty()) {
    fail("expected a string for " + what_ + ", got " + describe_node(node_));
  }
  return node_.Scalar();
}

std::int64_t yaml_value::integer() const {
  if (!node_.IsScalar()) fail("expected an integer for " + what_ + ", got " + describe_node(node_));
  const std::string& s = node_.Scalar();
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size()) {
    fail("expected an integer for " + what_ + ", got " + describe_node(node_));
  }
  return value;
}

double yaml_value::number() const {
  if (!node_.IsScalar()) fail("expected a number for " + what_ + ", got " + describe_node(node_));
  const std::string& s = node_.Scalar();
  double value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(value)) {
    fail("expected a number for " + what_ + ", got " + describe_node(node_));
  }
  return value;
}

bool yaml_value::boolean() const {
  if (node_.IsScalar()) {
    if (node_.Scalar() == "true") return true;
    if (node_.Scalar() == "false") return false;
  }
  fail("expected true or false for " + what_ + ", got " + describe_node(node_));
}

std::string yaml_value::one_of(std::initializer_list<std::string_view> choices) const {
  if (node_.IsScalar()) {
    const std::string& s = node_.Scalar();
    if (std::find(choices.begin(), choices.end(), s) != choices.end()) return s;
  }
  const std::span<const std::string_view> valid(choices.begin(), choices.size());
  std::string message = "expected " + join_choices(valid) + " for " + what_ + ", got " +
                        describe_node(node_);
  if (node_.IsScalar()) {
    if (const auto hint = did_you_mean(node_.Scalar(), valid); !hint.empty()) {
      message += "; " + hint;
    }
  }
  fail(message);
}

std::vector<yaml_value> yaml_value::items() const {
  if (!node_.IsSequence()) fail("expected a list for " + what_ + ", got " + describe_node(node_));
  std::vector<yaml_value> out;
  out.reserve(node_.size());
  for (std::size_t i = 0; i < node_.size(); ++i) {
    out.emplace_back(node_[i], file_, "item " + std::to_string(i + 1) + " of " + what_);
  }
  return out;
}

std::vector<double> yaml_value::numbers() const {
  if (node_.IsScalar()) return {number()};
  if (!node_.IsSequence()) {
    fail("expected a number or a list of numbers for " + what_ + ", got " + describe_node(node_));
  }
  std::vector<double> out;
  for (const auto& item : items()) out.push_back(item.number());
  return out;
}

// ---- yaml_map ----

yaml_map::yaml_map(const YAML::Node& node, const std::string& file, std::string what,
                   std::span<const std::string_view> allowed)
    : node_(node), file_(file), what_(std::move(what)) {
  if (!node.IsMap()) {
    throw scenario_error(where(), "expected a mapping for " + what_ + ", got " + describe_node(node));
  }
  // A misspelled key is more likely one of those not given yet.
  std::vector<std::string_view> not_given(allowed.begin(), allowed.end());
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) continue;
    std::erase(not_given, std::string_view(it->first.Scalar()));
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key_node = it->first;
    const source_mark key_mark = mark_of(key_node, file_);
    if (!key_node.IsScalar()) throw scenario_error(key_mark, "expected a plain key in " + what_);
    std::string key = key_node.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      throw scenario_error(key_mark, "unknown key '" + key + "' in " + what_ +
                                         hint_or_expected(key, not_given, join_choices(allowed)));
    }
    if (lookup(key) != nullptr) {
      throw scenario_error(key_mark, "duplicate key '" + key + "' in " + what_);
    }
    entries_.push_back({std::move(key), key_node, it->second});
  }
}

void yaml_map::fail(const std::string& message) const { throw scenario_error(where(), message); }

const yaml_map::entry* yaml_map::lookup(std::string_view key) const noexcept {
  for (const auto& e : entries_) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

bool yaml_map::has(std::string_view key) const noexcept { return lookup(key) != nullptr; }

std::optional<yaml_value> yaml_map::find(std::string_view key) const {
  const entry* e = lookup(key);
  if (e == nullptr) return std::nullopt;
  return yaml_value(e->value, file_, "'" + e->key + "' of " + what_);
}

yaml_value yaml_map::get(std::string_view key) const {
  auto v = find(key);
  if (!v) fail("missing required key '" + std::string(key) + "' in " + what_);
  return *std::move(v);
}

std::string yaml_map::text_or(std::string_view key, std::string fallback) const {
  const auto v = find(key);
  return v ? v->text() : std::move(fallback);
}

std::int64_t yaml_map::integer_or(std::string_view key, std::int64_t fallback) const {
  const auto v = find(key);
  return v ? v->integer() : fallback;
}

double yaml_map::number_or(std::string_view key, double fallback) const {
  const auto v = find(key);
  return v ? v->number() : fallback;
}

bool yaml_map::boolean_or(std::string_view key, bool fallback) const {
  const auto v = find(key);
  return v ? v->boolean() : fallback;
}

source_mark yaml_map::key_where(std::string_view key) const {
  const entry* e = lookup(key);
  return e != nullptr ? mark_of(e->key_node, file_) : where();
}

std::vector<std::string> yaml_map::keys() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.push_back(e.key);
  return out;
}

}  // namespace streamsan::harness
