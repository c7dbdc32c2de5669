// Sanitizer mode ends a process that reported anything with
// STREAMSAN_EXITCODE (default 66) at exit, like ThreadSanitizer.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

constexpr std::uint64_t bytes = 64 * sizeof(float);

// Runs a program in a child process in sanitizer mode and returns its exit
// status. The child exits through std::exit, so atexit handlers run.
int exit_status_of(bool racy, int exit_code_on_report) {
  const pid_t child = fork();
  if (child == 0) {
    auto options = testing::test_options();
    options.sanitize = true;
    options.print_diagnostics = false;
    options.exit_code_on_report = exit_code_on_report;
    initialize(options);
    auto a = allocate_device(bytes);
    auto sum = allocate_device(sizeof(float));
    stream side;
    launch(current_stream(), kernels::fill{a, 1.0f});
    if (!racy) side.wait_stream(current_stream());
    launch(side, kernels::reduce_sum{a, sum});
    synchronize();
    std::exit(3);  // the program's own status
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(SanitizerExitStatus, AReportEndsTheProcessWithTheReportExitCode) {
  STREAMSAN_REQUIRE_SIM();  // CUDA does not survive fork()
  EXPECT_EQ(exit_status_of(true, 66), 66);
}

TEST(SanitizerExitStatus, ACleanRunKeepsTheProgramsStatus) {
  STREAMSAN_REQUIRE_SIM();  // CUDA does not survive fork()
  EXPECT_EQ(exit_status_of(false, 66), 3);
}

TEST(SanitizerExitStatus, ZeroKeepsTheProgramsStatusDespiteReports) {
  STREAMSAN_REQUIRE_SIM();  // CUDA does not survive fork()
  EXPECT_EQ(exit_status_of(true, 0), 3);
}

TEST(SanitizerExitStatus, EnvironmentSetsTheExitCode) {
  ::setenv("STREAMSAN_EXITCODE", "7", 1);
  EXPECT_EQ(options_from_environment().exit_code_on_report, 7);
  ::setenv("STREAMSAN_EXITCODE", "300", 1);
  EXPECT_THROW(options_from_environment(), usage_error);
  ::unsetenv("STREAMSAN_EXITCODE");
  EXPECT_EQ(options_from_environment().exit_code_on_report, 66);
}

}  // namespace
}  // namespace streamsan::rt
