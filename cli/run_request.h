// What `streamsan run` was asked to do: its options (STREAMSAN_OPTIONS, then
// the command line over them) and the program to run. Parsing is apart from
// running so that it can be fuzzed (tests/fuzz/run_options_fuzz.cpp) and
// tested without starting a process.
#pragma once

#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "inject/session/options.h"

namespace streamsan::cli {

struct run_request {
  injection::sanitizer_options options;
  std::optional<std::string> library;  // --injection-library
  std::vector<std::string> program;    // argv of the program
  bool no_python = false;              // --no-python
};

// Parses `streamsan run`'s arguments over `env_options` (the value of
// STREAMSAN_OPTIONS, when set). Returns nullopt when there is nothing to run:
// --help (printed to `out`, status ok) or a bad option or value (named on
// `err`, status usage).
std::optional<run_request> parse_run_request(std::span<const std::string> args,
                                             std::optional<std::string_view> env_options,
                                             std::ostream& out, std::ostream& err, int& status);

}  // namespace streamsan::cli
