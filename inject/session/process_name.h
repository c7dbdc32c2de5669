// Which process a report is about, when `streamsan run` started several
// (Note [Reports of several processes]).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sanitizer/report/report_input.h"

namespace streamsan::injection {

// Set by `streamsan run` to its own pid: the process it starts is its
// child; any other sanitized process (torchrun's ranks, pytest-xdist's
// workers, a forked child) is a descendant further down.
inline constexpr std::string_view run_pid_variable = "STREAMSAN_RUN_PID";

// The process's name in its report: none for the program `streamsan run`
// started (or without `streamsan run`), else its pid and command line
// (arguments separated by spaces, cut to 80 characters). `run_pid` is the
// variable's text (null when unset); `command_line` is /proc/self/cmdline
// (arguments each ended by a NUL).
std::optional<process_name> name_this_process(pid_t self, pid_t parent, const char* run_pid,
                                              std::string_view command_line);

// The same for the calling process.
std::optional<process_name> name_this_process();

// Whether `executable` (a path or a file name) is a Python interpreter
// (python3, python3.12, pypy3). Inline: `streamsan run` recognizes Python
// programs by it too.
inline bool names_python_interpreter(std::string_view executable) {
  const auto slash = executable.rfind('/');
  const std::string_view base =
      slash == std::string_view::npos ? executable : executable.substr(slash + 1);
  return base.starts_with("python") || base.starts_with("pypy");
}

// Whether this process runs a Python interpreter (/proc/self/exe): its host
// accesses cannot be checked by building it with ThreadSanitizer.
bool runs_python_interpreter();

// The file a process writes for a path option (log_path, record): "%p"
// becomes the pid; a path without "%p" is the started program's as it is,
// and a named process's with ".<pid>" appended, so that several processes
// never overwrite each other's reports (Note [Reports of several
// processes]).
// Inline: `streamsan run` names the files of other processes by it too.
inline bool has_pid_placeholder(std::string_view path) {
  return path.find("%p") != std::string_view::npos;
}
inline std::string own_path(std::string path, std::int64_t pid, bool named) {
  const std::string id = std::to_string(pid);
  if (!has_pid_placeholder(path)) return named ? path + "." + id : path;
  for (auto at = path.find("%p"); at != std::string::npos; at = path.find("%p", at + id.size())) {
    path.replace(at, 2, id);
  }
  return path;
}

}  // namespace streamsan::injection
