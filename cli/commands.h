// The streamsan subcommands. Each takes the arguments after its own name
// and returns a process exit code (sanitizer/report/exit_codes.h). Each
// lives with the component it drives.
#pragma once

#include <span>
#include <string>

namespace streamsan::cli {

// streamsan analyze TRACE [options]        (sanitizer/, cli/analyze_command.cpp)
int analyze_command(std::span<const std::string> args);
// streamsan test [PATHS...] [options]      (harness/, cli/test_command.cpp)
int test_command(std::span<const std::string> args);
// streamsan run [options] -- PROGRAM ARGS  (inject/, cli/run_command.cpp)
int run_command(std::span<const std::string> args);
// streamsan dump TRACE: the trace as JSON lines, for debugging
int dump_command(std::span<const std::string> args);

}  // namespace streamsan::cli
