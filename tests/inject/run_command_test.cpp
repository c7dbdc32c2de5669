// `streamsan run` end to end, without a GPU: the program under test is a
// shell snippet, and where a test needs "the library found diagnostics" the
// snippet writes the result file the way the library does
// (Note [The result file]).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct outcome {
  int status = -1;
  std::string out;
  std::string err;
};

std::string read_all(int fd) {
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<std::size_t>(n));
  return s;
}

std::string streamsan() {
  const char* p = std::getenv("STREAMSAN");
  return p ? p : "streamsan";
}

// Runs streamsan with `args` and extra environment entries "K=V".
outcome run(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
            std::atomic<pid_t>* started = nullptr) {
  std::vector<std::string> argv_s{streamsan()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    if (entry.rfind("STREAMSAN_OPTIONS=", 0) == 0 || entry.rfind("CUDA_INJECTION64_PATH=", 0) == 0) {
      continue;
    }
    env_s.push_back(entry);
  }
  env_s.insert(env_s.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  EXPECT_EQ(::pipe(out_pipe), 0);
  EXPECT_EQ(::pipe(err_pipe), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  if (started) *started = pid > 0 ? pid : -1;  // -1: not started
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  outcome o;
  std::thread err_reader([&] { o.err = read_all(err_pipe[0]); });
  o.out = read_all(out_pipe[0]);
  err_reader.join();
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return o;
}

// A stand-in for the injection library file: `run` only checks it exists.
std::string stand_in_library() {
  static const std::string path = [] {
    char name[] = "/tmp/streamsan-test-inject-XXXXXX";
    const int fd = ::mkstemp(name);
    ::close(fd);
    return std::string(name);
  }();
  return path;
}

std::vector<std::string> with_library(std::vector<std::string> rest) {
  std::vector<std::string> args{"run", "--injection-library", stand_in_library()};
  args.insert(args.end(), rest.begin(), rest.end());
  return args;
}

TEST(RunCommand, ProgramWithoutCudaRunsAndGetsANote) {
  const auto o = run(with_library({"--", "/bin/true"}));
  EXPECT_EQ(o.status, 0);
  EXPECT_EQ(o.err, "streamsan: the program made no CUDA calls\n");
}

TEST(RunCommand, ExitStatusOfTheProgramPassesThrough) {
  EXPECT_EQ(run(with_library({"--", "/bin/sh", "-c", "exit 7"})).status, 7);
  EXPECT_EQ(run(with_library({"--", "/bin/false"})).status, 1);
}

TEST(RunCommand, FindsTheInjectionLibraryOfItsBuildTree) {
  const char* expected = std::getenv("STREAMSAN_INJECT");
  if (expected == nullptr) GTEST_SKIP() << "STREAMSAN_INJECT not set";
  const auto o = run({"run", "--", "/bin/sh", "-c", "echo \"$CUDA_INJECTION64_PATH\""});
  EXPECT_EQ(o.status, 0);
  char real[PATH_MAX];
  ASSERT_NE(::realpath(expected, real), nullptr);
  EXPECT_EQ(o.out, std::string(real) + "\n");
}

// Note [Reports of several processes]: the started program's parent is the
// pid the run passes down; its children's is not.
TEST(RunCommand, TheRunPassesItsPidToTheProgramItStarts) {
  const std::string started = "[ \"$STREAMSAN_RUN_PID\" = \"$PPID\" ] && echo started-by-the-run";
  const std::string child =
      "/bin/sh -c '[ \"$STREAMSAN_RUN_PID\" != \"$PPID\" ] && echo child-is-not'";
  EXPECT_EQ(run(with_library({"--", "/bin/sh", "-c", started + "; " + child})).out,
            "started-by-the-run\nchild-is-not\n");
}

TEST(RunCommand, OptionsReachTheProgramCanonically) {
  const auto o = run(with_library({"--format", "json", "--print-limit", "3", "--precise",
                                   "--no-builtin-suppressions", "--", "/bin/sh", "-c",
                                   "echo \"$STREAMSAN_OPTIONS\""}),
                     {"STREAMSAN_OPTIONS=print_limit=9:stack_depth=4:capture=cupti"});
  EXPECT_EQ(o.status, 0);
  // The command line overrides the environment; the rest of it is kept.
  EXPECT_EQ(o.out,
            "log_path=:format=json:suppressions=:builtin_suppressions=0:print_limit=3:"
            "halt_on_error=0:record=:"
            "stack_depth=4:error_exitcode=66:precise=1:capture=cupti:color=auto:raw_stacks=0:"
            "cpp_stacks=0:python_frames=1\n");
}

TEST(RunCommand, UnknownOptionInTheEnvironmentIsAnError) {
  const auto o = run(with_library({"--", "/bin/true"}), {"STREAMSAN_OPTIONS=verbose=1"});
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.err, HasSubstr("STREAMSAN_OPTIONS: unknown option 'verbose'"));
}

TEST(RunCommand, BadOptionsAreUsageErrors) {
  auto o = run(with_library({"--format", "xml", "--", "/bin/true"}));
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.err, HasSubstr("--format: format=xml: expected text, json, sarif, html or chrome-trace"));
  o = run(with_library({"--frobnicate", "--", "/bin/true"}));
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.err, HasSubstr("unrecognised option '--frobnicate'"));
  o = run(with_library({"--format", "json"}));
  EXPECT_EQ(o.status, 2);
  EXPECT_THAT(o.err, HasSubstr("no program given"));
  o = run({"run", "--injection-library", "/nonexistent/lib.so", "--", "/bin/true"});
  EXPECT_EQ(o.status, 127);
  EXPECT_THAT(o.err, HasSubstr("--injection-library /nonexistent/lib.so: no such file"));
}

// The library's own variables are checked before the program starts
// (check_library_variables), not at its first CUDA call.
TEST(RunCommand, ABadLibraryVariableStopsTheRunBeforeTheProgram) {
  const auto o = run(with_library({"--", "/bin/sh", "-c", "echo started"}),
                     {"STREAMSAN_UNPATCH_WAIT_MS=5ms"});
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err, "streamsan run: STREAMSAN_UNPATCH_WAIT_MS=5ms: expected milliseconds from 0 "
                   "to 1000\n");
}

TEST(RunCommand, ProgramThatCannotBeStarted) {
  const auto o = run(with_library({"--", "/nonexistent/program"}));
  EXPECT_EQ(o.status, 127);
  EXPECT_THAT(o.err, HasSubstr("cannot run '/nonexistent/program': No such file or directory"));
}

// The program writes what the library would: one process, 2 diagnostics.
const char* found_two = "echo started pid=$$ >>\"$STREAMSAN_RESULT_FILE\"; "
                        "echo finished pid=$$ cuda_calls=12 diagnostics=2 unmodelled=0 "
                        ">>\"$STREAMSAN_RESULT_FILE\"; exit 3";

TEST(RunCommand, DiagnosticsSetTheExitStatus) {
  EXPECT_EQ(run(with_library({"--", "/bin/sh", "-c", found_two})).status, 66);
  EXPECT_EQ(run(with_library({"--error-exitcode", "9", "--", "/bin/sh", "-c", found_two})).status,
            9);
  // 0 keeps the program's own status.
  EXPECT_EQ(run(with_library({"--error-exitcode", "0", "--", "/bin/sh", "-c", found_two})).status,
            3);
  const auto o = run(with_library({"--", "/bin/sh", "-c", found_two}));
  EXPECT_THAT(o.err, Not(HasSubstr("no CUDA calls")));
}

// Note [Reports when the program dies]: the library wrote its report and
// result, then the program died by its signal: that death is the status.
TEST(RunCommand, AProgramKilledBySignalKeepsItsDeathAsTheStatus) {
  const std::string found_then_segfault =
      "echo started pid=$$ >>\"$STREAMSAN_RESULT_FILE\"; "
      "echo finished pid=$$ cuda_calls=12 diagnostics=2 unmodelled=0 "
      ">>\"$STREAMSAN_RESULT_FILE\"; kill -SEGV $$";
  const auto o = run(with_library({"--", "/bin/sh", "-c", found_then_segfault}));
  EXPECT_EQ(o.status, 128 + SIGSEGV);
  EXPECT_THAT(o.err, HasSubstr("killed by signal 11"));
  EXPECT_THAT(o.err, Not(HasSubstr("diagnostics are lost")));
}

TEST(RunCommand, LibraryStartedWithoutCudaCallsStillGetsTheNote) {
  // An NVTX call starts the library; no CUDA call followed.
  const auto o = run(with_library(
      {"--", "/bin/sh", "-c",
       "echo started pid=$$ >>\"$STREAMSAN_RESULT_FILE\"; echo finished pid=$$ cuda_calls=0 "
       "diagnostics=0 unmodelled=0 >>\"$STREAMSAN_RESULT_FILE\""}));
  EXPECT_EQ(o.status, 0);
  EXPECT_EQ(o.err, "streamsan: the program made no CUDA calls\n");
}

TEST(RunCommand, ProcessThatNeverReportedIsSaidSo) {
  const auto o = run(with_library(
      {"--", "/bin/sh", "-c", "echo started pid=$$ >>\"$STREAMSAN_RESULT_FILE\""}));
  EXPECT_EQ(o.status, 0);
  EXPECT_THAT(o.err, HasSubstr("1 sanitized process(es) ended before printing a report"));
}

TEST(RunCommand, SignalsAreForwardedToTheProgram) {
  // The killer waits for the pid (ThreadSanitizer saw the sleep as the only
  // order), and never sends to pid 0, the test's own process group.
  std::atomic<pid_t> pid{0};
  std::thread killer([&] {
    while (pid.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (pid.load() > 0) ::kill(pid.load(), SIGTERM);
  });
  const auto start = std::chrono::steady_clock::now();
  const auto o = run(with_library({"--", "/bin/sleep", "20"}), {}, &pid);
  killer.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(o.status, 128 + SIGTERM);
  EXPECT_THAT(o.err, HasSubstr("killed by signal 15"));
}

// Note [No signal lost while the program starts] in cli/run_command.cpp: a
// SIGTERM sent while streamsan starts the program ends the run, never
// leaving the program to run on. The delays step through the first 30 ms
// of the run (about where the fork is) by a quarter of a millisecond.
TEST(RunCommand, ASignalSentWhileTheProgramStartsIsNotLost) {
  for (int delay_us = 0; delay_us <= 30'000; delay_us += 250) {
    std::atomic<pid_t> pid{0};
    std::thread killer([&] {
      while (pid.load() == 0) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      if (pid.load() > 0) ::kill(pid.load(), SIGTERM);
    });
    const auto start = std::chrono::steady_clock::now();
    const auto o = run(with_library({"--", "/bin/sleep", "20"}), {}, &pid);
    killer.join();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10))
        << "delay " << delay_us << " us";
    EXPECT_EQ(o.status, 128 + SIGTERM) << "delay " << delay_us << " us";
  }
}

}  // namespace

// How host accesses were checked is said once per run (docs/tsan-bridge.md).
TEST(RunCommand, HostAccessesSeenOnlyThroughAnnotationsIsSaidOnce) {
  const std::string finished = "echo finished pid=$$ cuda_calls=3 diagnostics=0 unmodelled=0 "
                               "host_accesses=annotations >>\"$STREAMSAN_RESULT_FILE\"; ";
  const std::string started = "echo started pid=$$ >>\"$STREAMSAN_RESULT_FILE\"; ";
  // Two processes, one note.
  const auto o = run(with_library({"--", "/bin/sh", "-c", started + finished + started + finished}));
  EXPECT_EQ(o.status, 0);
  EXPECT_EQ(o.err,
            "streamsan: host accesses were seen only through annotations "
            "(include/streamsan/annotate.h); build the program with -fsanitize=thread to have "
            "ThreadSanitizer check them against device work (docs/tsan-bridge.md)\n");
}

// A Python process whose tensors' host accesses the PyTorch support told
// gets no advice to build with -fsanitize=thread, and neither does a
// process that made no CUDA call (torchrun's agent).
TEST(RunCommand, PythonProcessesGetNoAnnotationAdvice) {
  const std::string started = "echo started pid=$$ >>\"$STREAMSAN_RESULT_FILE\"; ";
  const std::string rank = "echo finished pid=$$ cuda_calls=9 diagnostics=0 unmodelled=0 "
                           "host_accesses=torch >>\"$STREAMSAN_RESULT_FILE\"; ";
  const std::string agent = "echo finished pid=$$ cuda_calls=0 diagnostics=0 unmodelled=0 "
                            "host_accesses=annotations >>\"$STREAMSAN_RESULT_FILE\"; ";
  const auto o = run(with_library({"--", "/bin/sh", "-c", started + agent + started + rank}));
  EXPECT_EQ(o.status, 0);
  EXPECT_EQ(o.err, "");
}

// A Python interpreter without the PyTorch support (CuPy, JAX): no advice
// to rebuild it, but the user is told its Python code went unchecked.
TEST(RunCommand, PythonWithoutThePyTorchSupportIsToldItsHostAccessesWentUnchecked) {
  const auto o = run(with_library(
      {"--", "/bin/sh", "-c",
       "echo started pid=$$ >>\"$STREAMSAN_RESULT_FILE\"; echo finished pid=$$ cuda_calls=3 "
       "diagnostics=0 unmodelled=0 host_accesses=interpreter >>\"$STREAMSAN_RESULT_FILE\""}));
  EXPECT_EQ(o.status, 0);
  EXPECT_EQ(o.err,
            "streamsan: the host reads and writes of Python code were not checked against "
            "device work (outside PyTorch's tensors nothing tells them; docs/pytorch.md, "
            "Limits)\n");
}

TEST(RunCommand, HostAccessesCheckedByThreadSanitizerIsSaid) {
  const auto o = run(with_library(
      {"--", "/bin/sh", "-c",
       "echo started pid=$$ >>\"$STREAMSAN_RESULT_FILE\"; echo finished pid=$$ cuda_calls=3 "
       "diagnostics=0 unmodelled=0 host_accesses=tsan >>\"$STREAMSAN_RESULT_FILE\""}));
  EXPECT_EQ(o.status, 0);
  EXPECT_THAT(o.err, HasSubstr("ThreadSanitizer checked the program's host accesses"));
  EXPECT_THAT(o.err, Not(HasSubstr("annotations")));
}

// Note [Reports of several processes]: with a log path without %p, every
// process but the started one wrote PATH.<pid>; the run lists those files.
TEST(RunCommand, ReportsOfOtherProcessesAreListedWhenTheLogPathHasNoPid) {
  const std::string log = "/tmp/streamsan-run-command-other-" + std::to_string(::getpid());
  const std::string rank = log + ".4242";
  const std::string script =
      "echo started pid=4242 >>\"$STREAMSAN_RESULT_FILE\"; : > " + rank +
      "; echo finished pid=4242 cuda_calls=3 diagnostics=0 unmodelled=0 "
      "host_accesses=torch >>\"$STREAMSAN_RESULT_FILE\"";
  EXPECT_EQ(run(with_library({"--log-path", log, "--", "/bin/sh", "-c", script})).err,
            "streamsan: the reports of 1 other sanitized process (" + log +
                " has no %p): " + rank + "\n");
  // With %p each process has its own file already: nothing to list.
  EXPECT_EQ(run(with_library({"--log-path", log + ".%p", "--", "/bin/sh", "-c", script})).err, "");
  ::unlink(rank.c_str());
}

// With --log-path the program's stderr stays its own: no advice about
// annotations, but a ThreadSanitizer run is still said (its reports are on
// stderr anyway).
TEST(RunCommand, WithALogPathOnlyTheThreadSanitizerNoteIsPrinted) {
  const std::string log = "/tmp/streamsan-run-command-test-" + std::to_string(::getpid());
  const auto annotations = run(with_library(
      {"--log-path", log, "--", "/bin/sh", "-c",
       "echo started pid=$$ >>\"$STREAMSAN_RESULT_FILE\"; echo finished pid=$$ cuda_calls=3 "
       "diagnostics=0 unmodelled=0 host_accesses=annotations >>\"$STREAMSAN_RESULT_FILE\""}));
  EXPECT_EQ(annotations.err, "");
  const auto tsan = run(with_library(
      {"--log-path", log, "--", "/bin/sh", "-c",
       "echo started pid=$$ >>\"$STREAMSAN_RESULT_FILE\"; echo finished pid=$$ cuda_calls=3 "
       "diagnostics=0 unmodelled=0 host_accesses=tsan >>\"$STREAMSAN_RESULT_FILE\""}));
  EXPECT_THAT(tsan.err, HasSubstr("ThreadSanitizer checked the program's host accesses"));
  ::unlink(log.c_str());
}
