// Typed, position-aware access to yaml-cpp nodes. Every error names the
// place (file:line:column, from yaml-cpp's Mark) and says what was expected,
// so a scenario author can fix a file without reading the parser.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "harness/source_mark.h"

namespace streamsan::harness {

source_mark mark_of(const YAML::Node& node, const std::string& file);
source_mark mark_of(const YAML::Mark& mark, const std::string& file);

// A scalar or sequence value read from a mapping or a sequence.
class yaml_value {
 public:
  yaml_value(YAML::Node node, const std::string& file, std::string what);

  const YAML::Node& node() const noexcept { return node_; }
  source_mark where() const { return mark_of(node_, file_); }
  const std::string& what() const noexcept { return what_; }
  const std::string& file() const noexcept { return file_; }

  bool is_sequence() const noexcept { return node_.IsSequence(); }
  bool is_map() const noexcept { return node_.IsMap(); }
  bool is_scalar() const noexcept { return node_.IsScalar(); }

  std::string text() const;  // any scalar
  std::int64_t integer() const;
  double number() const;
  bool boolean() const;
  // One of `choices`; the error lists them.
  std::string one_of(std::initializer_list<std::string_view> choices) const;
  std::vector<yaml_value> items() const;  // a sequence's elements
  // A list of numbers, or a single number (returned as one element).
  std::vector<double> numbers() const;

  [[noreturn]] void fail(const std::string& message) const;

 private:
  YAML::Node node_;
  std::string file_;
  std::string what_;  // "'size' of buffer A", for messages
};

// A mapping whose keys must all be known: the constructor rejects unknown
// and duplicate keys, naming the key and listing the accepted ones.
class yaml_map {
 public:
  yaml_map(const YAML::Node& node, const std::string& file, std::string what,
           std::span<const std::string_view> allowed);
  yaml_map(const YAML::Node& node, const std::string& file, std::string what,
           std::initializer_list<std::string_view> allowed)
      : yaml_map(node, file, std::move(what), std::span(allowed.begin(), allowed.size())) {}
  yaml_map(const yaml_value& value, std::initializer_list<std::string_view> allowed)
      : yaml_map(value.node(), value.file(), value.what(), allowed) {}

  bool has(std::string_view key) const noexcept;
  std::optional<yaml_value> find(std::string_view key) const;
  yaml_value get(std::string_view key) const;  // required

  std::string text(std::string_view key) const { return get(key).text(); }
  std::string text_or(std::string_view key, std::string fallback) const;
  std::int64_t integer_or(std::string_view key, std::int64_t fallback) const;
  double number_or(std::string_view key, double fallback) const;
  bool boolean_or(std::string_view key, bool fallback) const;

  source_mark where() const { return mark_of(node_, file_); }
  source_mark key_where(std::string_view key) const;
  const std::string& what() const noexcept { return what_; }
  const std::string& file() const noexcept { return file_; }
  // Keys in document order.
  std::vector<std::string> keys() const;

  [[noreturn]] void fail(const std::string& message) const;

 private:
  struct entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
  };
  const entry* lookup(std::string_view key) const noexcept;

  YAML::Node node_;
  std::string file_;
  std::string what_;
  std::vector<entry> entries_;
};

// "a, b or c"
std::string join_choices(std::span<const std::string_view> choices);

// The tail of an "unknown NAME" message: "; did you mean 'b'? (expected
// a, b or c)" when a valid name is close to `typed` (Note [Suggesting a
// name] in harness/nearest_name.h), else "; expected a, b or c".
// `expected` is the text after "expected ".
std::string hint_or_expected(std::string_view typed, std::span<const std::string_view> valid,
                             const std::string& expected);
std::string hint_or_expected(std::string_view typed, const std::vector<std::string>& valid,
                             const std::string& expected);

}  // namespace streamsan::harness
