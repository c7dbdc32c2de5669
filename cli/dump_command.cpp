// streamsan dump TRACE: the trace as JSON lines, one object per record
// (sanitizer/log/jsonl_dump.h), for looking inside a trace.
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "sanitizer/log/jsonl_dump.h"
#include "sanitizer/log/trace_error.h"
#include "sanitizer/log/trace_reader.h"
#include "sanitizer/report/exit_codes.h"

namespace streamsan::cli {
namespace {

constexpr std::string_view usage_text =
    "usage: streamsan dump TRACE [--allow-truncated]\n"
    "\n"
    "Prints every record of TRACE as one JSON object per line. A corrupt or\n"
    "truncated trace prints the records before the damage, then the error\n"
    "(exit status 3).\n"
    "\n"
    "options:\n"
    "  -h [ --help ]         print this help and exit\n"
    "  --allow-truncated     accept a trace whose writer died before closing it\n";

}  // namespace

int dump_command(std::span<const std::string> args) {
  std::string trace;
  bool allow_truncated = false;
  for (const auto& arg : args) {
    if (arg == "--help" || arg == "-h") {
      std::cout << usage_text;
      return exit_code::ok;
    }
    if (arg == "--allow-truncated") {
      allow_truncated = true;
    } else if (arg.starts_with('-') && arg != "-") {
      std::cerr << "streamsan dump: unrecognised option '" << arg << "'\n" << usage_text;
      return exit_code::usage;
    } else if (!trace.empty()) {
      std::cerr << "streamsan dump: one trace file at a time\n" << usage_text;
      return exit_code::usage;
    } else {
      trace = arg;
    }
  }
  if (trace.empty()) {
    std::cerr << "streamsan dump: no trace file given\n" << usage_text;
    return exit_code::usage;
  }
  jsonl_dumper dumper(std::cout);
  try {
    trace_reader reader(trace, {.allow_missing_end = allow_truncated});
    reader.read_all(dumper);
  } catch (const trace_error& e) {
    std::cout.flush();
    std::cerr << "streamsan dump: " << e.what() << '\n';
    return exit_code::bad_input;
  }
  return exit_code::ok;
}

}  // namespace streamsan::cli
