// ThreadSanitizer-style suppression files:
//
//   # comments and blank lines are ignored
//   race:fill_kernel          any race kind (is_race) involving fill_kernel
//   sync:^legacy_sync$        any other kind
//   stream-race:*/vendor/*    one diagnostic kind, by its to_string name
//
// A pattern is a glob where '*' matches any run of characters. Unanchored,
// it may match anywhere in a name (as if wrapped in '*'); a leading '^' or a
// trailing '$' anchors it to the start or end. It is matched against the
// names of both operations (kernel, host function, graph node, label), the
// allocation's label, and the function and file of every frame of both
// operations' stacks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/report/symbolizer.h"

namespace streamsan {

// "FILE:LINE: CAUSE" for a malformed line; "FILE: CAUSE" for an unreadable file.
class suppression_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct suppression_rule {
  std::string category;  // "race", "sync", or a diagnostic kind name
  std::string pattern;   // as written, anchors included
  std::string origin;    // "FILE:LINE", for messages
};

class suppressions {
 public:
  suppressions() = default;

  // Throws suppression_error naming `source_name`:LINE and the cause.
  static suppressions parse(std::string_view text, std::string_view source_name);
  // Throws suppression_error when the file cannot be read or is malformed.
  static suppressions load(const std::filesystem::path& path);

  // The index of the first rule that matches `d`, if any.
  std::optional<std::size_t> match(const diagnostic& d, symbolizer& symbols) const;

  std::span<const suppression_rule> rules() const noexcept { return rules_; }
  bool empty() const noexcept { return rules_.empty(); }

 private:
  std::vector<suppression_rule> rules_;
};

// True when the glob `pattern` (see above) matches `text`.
bool suppression_pattern_matches(std::string_view pattern, std::string_view text) noexcept;

struct suppression_result {
  std::vector<diagnostic> kept;
  std::uint64_t suppressed = 0;     // diagnostics removed
  std::vector<std::uint64_t> hits;  // per rule, in rules() order
};

suppression_result apply_suppressions(std::span<const diagnostic> diagnostics,
                                      const suppressions& rules, symbolizer& symbols);

}  // namespace streamsan
