// Fuzz target: the options of a sanitized run, from STREAMSAN_OPTIONS and from
// `streamsan run`'s command line. The input's first line is the value of
// STREAMSAN_OPTIONS (no line: unset); each further line is one argument.
// Every input is either refused (status usage, with a message) or accepted;
// accepted options survive their round trip through the canonical spelling
// that `streamsan run` hands the injection library, and any text given to
// the library's own parser is either refused with an option_error or read
// to options that round-trip too.
#include <sstream>
#include <string>
#include <vector>

#include "cli/run_request.h"
#include "inject/session/options.h"
#include "sanitizer/report/exit_codes.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

using namespace streamsan;

void check_round_trip(const injection::sanitizer_options& o) {
  const std::string spelled = injection::to_string(o);
  injection::sanitizer_options again;
  try {
    again = injection::parse_options(spelled);
  } catch (const injection::option_error&) {
    FUZZ_CHECK(!"the canonical spelling of accepted options was refused");
  }
  FUZZ_CHECK(injection::to_string(again) == spelled);
}

void fuzz_library_parser(std::string_view text) {
  try {
    check_round_trip(injection::parse_options(text));
  } catch (const injection::option_error& e) {
    FUZZ_CHECK(*e.what() != '\0');
  }
}

void fuzz_command_line(std::string_view text) {
  const auto newline = text.find('\n');
  std::optional<std::string_view> env;
  std::vector<std::string> args;
  if (newline != std::string_view::npos) {
    env = text.substr(0, newline);
    std::string_view rest = text.substr(newline + 1);
    while (!rest.empty()) {
      const auto end = rest.find('\n');
      args.emplace_back(rest.substr(0, end));
      rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    }
  } else {
    args.emplace_back(text);
  }
  std::ostringstream out, err;
  int status = exit_code::ok;
  const auto request = cli::parse_run_request(args, env, out, err, status);
  if (request) {
    FUZZ_CHECK(status == exit_code::ok);
    FUZZ_CHECK(!request->program.empty());
    check_round_trip(request->options);
  } else if (status == exit_code::ok) {
    FUZZ_CHECK(!out.str().empty());  // --help
  } else {
    FUZZ_CHECK(status == exit_code::usage);
    FUZZ_CHECK(err.str().starts_with("streamsan run: "));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto text = fuzz::as_text(data, size);
  fuzz_library_parser(text);
  fuzz_command_line(text);
  return 0;
}
