// What `streamsan run` was asked to do: its options (STREAMSAN_OPTIONS, then
// the command line over them) and the program to run. Parsing is apart from
// running so that it can be fuzzed (tests/fuzz/run_options_fuzz.cpp) and
// tested without starting a process.
#pragma once

#include <functional>
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

// The injection library's own variables besides STREAMSAN_OPTIONS, read as
// the library reads them (injection::read_library_settings) through
// `lookup` (null: unset). The library reads them where it starts, at the
// program's first CUDA call, and a bad value stops the program there;
// checked before the program starts, a misspelt value costs nothing.
// Returns the error naming the variable and its value, or nullopt.
std::optional<std::string> check_library_variables(
    const std::function<const char*(std::string_view)>& lookup);

}  // namespace streamsan::cli
