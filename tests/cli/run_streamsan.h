// Runs the built `streamsan` binary (its path comes from the STREAMSAN_BIN
// environment variable, set by tests/cli/meson.build) and captures what it
// prints and its exit status.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace streamsan::testing {

struct command_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Arguments are passed to the shell single-quoted, so spaces are safe.
command_result run_streamsan(const std::vector<std::string>& args);

}  // namespace streamsan::testing
