// ThreadSanitizer-style suppression files:
//
//   # comments and blank lines are ignored
//   race:fill_kernel          any race kind (is_race) involving fill_kernel
//   sync:^legacy_sync$        any other kind
//   stream-race:*/vendor/*    one diagnostic kind, by its to_string name
//   called_from_lib:^libfoo.so   any kind, when every operation was called
//                             from that library (below)
//
// A pattern is a glob where '*' matches any run of characters. Unanchored,
// it may match anywhere in a name (as if wrapped in '*'); a leading '^' or a
// trailing '$' anchors it to the start or end. A race/sync/KIND pattern is
// matched against the names of both operations (kernel, host function, graph
// node, label), the allocation's label, and the function, file and module of
// every frame of both operations' stacks.
//
// Note [Suppressions for calls from libraries]
// ThreadSanitizer's called_from_lib:LIB ignores what a library does through
// the runtime on the program's behalf. Here a called_from_lib pattern is
// matched against the call site of each operation of a diagnostic: the
// innermost frame of its stack outside CUDA itself and streamsan (the CUDA
// runtime, driver and CUPTI, the injection library), i.e. the frame that
// called the CUDA API. It matches that frame's module, by file name
// (libcublas.so.13) and by full path. A diagnostic is suppressed when the call
// sites of all its operations (the current one, and the previous one when
// there is one) match called_from_lib rules, not necessarily the same one;
// the hit counts for the rule that matched the current operation. An
// operation without a stack, or whose call site's module is unknown, is never
// taken for a library's: a race between a library's kernel and the program's
// own work, or a bad stream the program handed the library, stays reported.
//
// Built in (suppressions::builtin(), Note [Built-in library suppressions] in
// suppressions.cpp): the NVIDIA libraries whose internal event and stream
// handling streamsan cannot see, cuBLAS, cuBLASLt, cuDNN, cuFFT, cuSPARSE,
// cuRAND, NCCL and cuSOLVER. Front ends put a user's file first, then the
// built-ins, unless turned off (streamsan analyze --no-builtin-suppressions).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
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
  // "race", "sync", "called_from_lib", or a diagnostic kind name
  std::string category;
  std::string pattern;  // as written, anchors included
  std::string origin;   // "FILE:LINE", or "built-in (LIBRARY)", for messages
  bool builtin = false;
};

class suppressions {
 public:
  suppressions() = default;

  // Throws suppression_error naming `source_name`:LINE and the cause.
  static suppressions parse(std::string_view text, std::string_view source_name);
  // Throws suppression_error when the file cannot be read or is malformed.
  static suppressions load(const std::filesystem::path& path);
  // The built-in called_from_lib rules for NVIDIA's libraries.
  static suppressions builtin();

  // Appends `more`'s rules after these (earlier rules win a match).
  void append(const suppressions& more);

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
  std::uint64_t suppressed = 0;          // diagnostics removed
  std::uint64_t suppressed_builtin = 0;  // of those, by built-in rules
  std::vector<std::uint64_t> hits;       // per rule, in rules() order
};

suppression_result apply_suppressions(std::span<const diagnostic> diagnostics,
                                      const suppressions& rules, symbolizer& symbols);

// Every rule with how many diagnostics it removed (`hits` as in
// suppression_result), built-in ones included, one per line:
//   streamsan: suppressions (hits, rule, origin):
//         2  called_from_lib:^libcublas.so  built-in (cuBLAS)
//         0  race:fill_kernel  supp.txt:3
void print_suppressions(std::ostream& out, const suppressions& rules,
                        std::span<const std::uint64_t> hits);

}  // namespace streamsan
