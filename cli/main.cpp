#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "sanitizer/report/exit_codes.h"

namespace {

constexpr std::string_view usage_text =
    "usage: streamsan <command> [options]\n"
    "\n"
    "commands:\n"
    "  run [options] -- PROGRAM ARGS...  sanitize an unmodified CUDA program\n"
    "  test [PATHS...] [options]         replay scenario files\n"
    "  analyze TRACE [options]           report the diagnostics of a recorded trace\n"
    "  dump TRACE                        print a trace as JSON lines\n"
    "\n"
    "Run 'streamsan <command> --help' for the options of a command.\n";

}  // namespace

int main(int argc, char** argv) {
  namespace cli = streamsan::cli;
  if (argc < 2) {
    std::cerr << usage_text;
    return streamsan::exit_code::usage;
  }
  const std::string_view command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "run") return cli::run_command(args);
    if (command == "test") return cli::test_command(args);
    if (command == "analyze") return cli::analyze_command(args);
    if (command == "dump") return cli::dump_command(args);
    if (command == "--help" || command == "-h" || command == "help") {
      std::cout << usage_text;
      return streamsan::exit_code::ok;
    }
    std::cerr << "streamsan: unknown command '" << command << "'\n\n" << usage_text;
    return streamsan::exit_code::usage;
  } catch (const std::exception& e) {
    std::cerr << "streamsan " << command << ": " << e.what() << '\n';
    return streamsan::exit_code::failed;
  }
}
