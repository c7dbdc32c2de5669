#include "inject/session/process_name.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace streamsan::injection {

// Note [Reports of several processes]
// Every sanitized process prints its own report when it ends (the library
// runs in it), so `streamsan run -- torchrun --nproc-per-node 2 train.py`
// printed three "streamsan: reported 0 warnings" lines (the agent's and
// each rank's, on two H200s) with nothing to tell them apart, and a rank's
// warnings did not say which rank found them. The program `streamsan run`
// started keeps its report as it is; every other process names itself in
// its warnings' headlines and its summary line (text) and in a "process"
// object (JSON): its pid and its command line. A process knows it is not
// the started one when its parent is not `streamsan run`, whose pid the
// run passes down in STREAMSAN_RUN_PID. A report file named without "%p"
// (--log-path report.json) was overwritten by each process in turn, the
// last one's kept and the others' lost without a word; a named process now
// writes report.json.<pid> instead, and `streamsan run` lists those files.
namespace {

constexpr std::size_t command_limit = 80;

std::string spaced(std::string_view command_line) {
  std::string out;
  for (const char c : command_line) {
    if (out.size() >= command_limit) {
      out.replace(command_limit - 3, std::string::npos, "...");
      break;
    }
    out += c == '\0' ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

std::optional<process_name> name_this_process(pid_t self, pid_t parent, const char* run_pid,
                                              std::string_view command_line) {
  if (run_pid == nullptr) return std::nullopt;
  const std::string_view text(run_pid);
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  // A value we cannot read names nobody: the report stays as it was.
  if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  if (value == parent) return std::nullopt;  // the program `streamsan run` started
  return process_name{static_cast<std::int64_t>(self), spaced(command_line)};
}

std::optional<process_name> name_this_process() {
  std::ifstream file("/proc/self/cmdline", std::ios::binary);
  const std::string command_line{std::istreambuf_iterator<char>(file),
                                 std::istreambuf_iterator<char>()};
  return name_this_process(::getpid(), ::getppid(), std::getenv(run_pid_variable.data()),
                           command_line);
}

bool runs_python_interpreter() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 && names_python_interpreter(std::string_view(path, static_cast<std::size_t>(n)));
}

}  // namespace streamsan::injection
