#include "inject/session/process_name.h"

#include <gtest/gtest.h>

namespace streamsan::injection {
namespace {

using namespace std::string_view_literals;

// Note [Reports of several processes]
TEST(ProcessName, TheProgramStreamsanRunStartedIsNotNamed) {
  EXPECT_FALSE(name_this_process(200, 100, "100", "python3\0train.py\0"sv));
}

TEST(ProcessName, ADescendantIsNamedByPidAndCommandLine) {
  const auto name = name_this_process(300, 200, "100", "python3\0-u\0train.py\0"sv);
  ASSERT_TRUE(name);
  EXPECT_EQ(name->pid, 300);
  EXPECT_EQ(name->command, "python3 -u train.py");
}

TEST(ProcessName, WithoutStreamsanRunNothingIsNamed) {
  EXPECT_FALSE(name_this_process(300, 200, nullptr, "a.out\0"sv));
}

TEST(ProcessName, AnUnreadableRunPidNamesNobody) {
  EXPECT_FALSE(name_this_process(300, 200, "", "a.out\0"sv));
  EXPECT_FALSE(name_this_process(300, 200, "12x", "a.out\0"sv));
}

TEST(ProcessName, ALongCommandLineIsCut) {
  const std::string arguments = std::string("python3\0", 8) + std::string(200, 'a') + '\0';
  const auto name = name_this_process(300, 200, "100", arguments);
  ASSERT_TRUE(name);
  EXPECT_EQ(name->command.size(), 80u);
  EXPECT_EQ(name->command.substr(77), "...");
  EXPECT_EQ(name->command.substr(0, 8), "python3 ");
}

// A path without %p stays the started program's; a named process adds its
// pid, so that no process overwrites another's report.
TEST(ProcessName, OwnPathsNeverCollide) {
  EXPECT_EQ(own_path("report.json", 42, false), "report.json");
  EXPECT_EQ(own_path("report.json", 42, true), "report.json.42");
  EXPECT_EQ(own_path("report.%p.json", 42, false), "report.42.json");
  EXPECT_EQ(own_path("report.%p.json", 42, true), "report.42.json");
  EXPECT_EQ(own_path("%p/%p", 7, true), "7/7");
}

// The result file's host_accesses=interpreter (no -fsanitize=thread advice
// for a Python interpreter).
TEST(ProcessName, PythonInterpretersAreNamedByTheirExecutable) {
  EXPECT_TRUE(names_python_interpreter("/usr/bin/python3.12"));
  EXPECT_TRUE(names_python_interpreter("python3"));
  EXPECT_TRUE(names_python_interpreter("/opt/pypy/bin/pypy3"));
  EXPECT_FALSE(names_python_interpreter("/usr/local/bin/simpleStreams"));
  EXPECT_FALSE(names_python_interpreter("/home/python/train"));
  EXPECT_FALSE(runs_python_interpreter());  // this test is no interpreter
}

}  // namespace
}  // namespace streamsan::injection
