#include "cli/run_request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "sanitizer/report/exit_codes.h"

namespace streamsan::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct parsed {
  std::optional<run_request> request;
  int status = -1;
  std::string out;
  std::string err;
};

parsed parse(std::vector<std::string> args, std::optional<std::string_view> env = std::nullopt) {
  parsed p;
  std::ostringstream out, err;
  p.status = exit_code::ok;
  p.request = parse_run_request(args, env, out, err, p.status);
  p.out = out.str();
  p.err = err.str();
  return p;
}

TEST(RunRequest, CommandLineOverridesTheEnvironment) {
  const auto p = parse({"--format", "json", "--precise", "--", "./app", "-x"},
                       "format=sarif:print_limit=3");
  ASSERT_TRUE(p.request) << p.err;
  EXPECT_EQ(p.request->options.format, report_format::json);
  EXPECT_EQ(p.request->options.print_limit, 3u);
  EXPECT_TRUE(p.request->options.precise);
  EXPECT_EQ(p.request->program, (std::vector<std::string>{"./app", "-x"}));
}

TEST(RunRequest, BadEnvironmentNamesTheVariable) {
  const auto p = parse({"--", "./app"}, "format=xml");
  EXPECT_FALSE(p.request);
  EXPECT_EQ(p.status, exit_code::usage);
  EXPECT_EQ(p.err,
            "streamsan run: STREAMSAN_OPTIONS: format=xml: expected text, json, sarif, html or "
            "chrome-trace\n");
}

TEST(RunRequest, BadFlagValueNamesTheFlag) {
  const auto p = parse({"--stack-depth", "65", "--", "./app"});
  EXPECT_EQ(p.status, exit_code::usage);
  EXPECT_EQ(p.err, "streamsan run: --stack-depth: stack_depth=65: expected an integer from 0 to 64\n");
}

TEST(RunRequest, NoProgramIsAUsageError) {
  const auto p = parse({"--precise"});
  EXPECT_EQ(p.status, exit_code::usage);
  EXPECT_THAT(p.err, StartsWith("streamsan run: no program given"));
}

TEST(RunRequest, HelpGoesToOut) {
  const auto p = parse({"--help"});
  EXPECT_FALSE(p.request);
  EXPECT_EQ(p.status, exit_code::ok);
  EXPECT_THAT(p.out, HasSubstr("--precise"));
}

// Found by tests/fuzz/run_options_fuzz.cpp (Note [Placeholders in
// command-line tokens]); before, this hung.
TEST(RunRequest, PlaceholderTokensAreRefused) {
  const auto p = parse({"--%original_token%format", "--", "./app"});
  EXPECT_EQ(p.status, exit_code::usage);
  EXPECT_EQ(p.err, "streamsan run: argument '--%original_token%format' holds "
                   "'%original_token%', which the option parser cannot read\n");
}

// Only streamsan's own arguments are read: the program's are its business.
TEST(RunRequest, ProgramArgumentsAreNotRead) {
  const auto p = parse({"--", "./app", "--%value%", "--format", "xml"});
  ASSERT_TRUE(p.request) << p.err;
  EXPECT_EQ(p.request->program.size(), 4u);
}

// The library's own variables are checked before the program starts: a bad
// one is named with its value, unset and good ones pass.
TEST(LibraryVariables, ABadValueIsNamedBeforeTheProgramStarts) {
  std::map<std::string, std::string, std::less<>> env;
  const auto lookup = [&](std::string_view name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_EQ(check_library_variables(lookup), std::nullopt);
  env["STREAMSAN_GRAPH_NODES"] = "off";
  env["STREAMSAN_UNPATCH_WAIT_MS"] = "50";
  EXPECT_EQ(check_library_variables(lookup), std::nullopt);
  env["STREAMSAN_UNPATCH_WAIT_MS"] = "5ms";
  EXPECT_EQ(check_library_variables(lookup),
            "STREAMSAN_UNPATCH_WAIT_MS=5ms: expected milliseconds from 0 to 1000");
  env["STREAMSAN_GRAPH_NODES"] = "yes";
  EXPECT_EQ(check_library_variables(lookup), "STREAMSAN_GRAPH_NODES=yes: expected measure or off");
  env.clear();
  env["STREAMSAN_RUNTIME_LAUNCH_CALLBACKS"] = "no";
  EXPECT_EQ(check_library_variables(lookup),
            "STREAMSAN_RUNTIME_LAUNCH_CALLBACKS=no: expected on or off");
}

}  // namespace
}  // namespace streamsan::cli
