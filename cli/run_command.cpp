// streamsan run [options] -- PROGRAM ARGS...
//
// Runs an unmodified CUDA program with the injection library loaded by the
// CUDA driver (CUDA_INJECTION64_PATH), hands it the options through
// STREAMSAN_OPTIONS, forwards signals, and turns what the library found into
// the exit status (see Note [The result file] in inject/session/run_result.h).
// The report itself is printed by the library in the sanitized process.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/run_request.h"
#include "inject/session/options.h"
#include "inject/session/process_name.h"
#include "inject/session/run_result.h"
#include "sanitizer/report/exit_codes.h"

namespace streamsan::cli {
namespace {

namespace fs = std::filesystem;
using injection::sanitizer_options;

constexpr std::string_view library_name = "libstreamsan_inject.so";

// Next to the streamsan binary (installed side by side, or the carried copy
// on a GPU machine), then the build tree and the usual library folders.
std::optional<fs::path> find_injection_library(const std::optional<std::string>& override_path,
                                               std::string& error) {
  std::error_code ec;
  if (override_path) {
    const fs::path p = fs::absolute(*override_path, ec);
    if (ec || !fs::is_regular_file(p, ec)) {
      error = "--injection-library " + *override_path + ": no such file";
      return std::nullopt;
    }
    return p;
  }
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    error = "cannot locate the streamsan binary: " + ec.message();
    return std::nullopt;
  }
  const fs::path dir = exe.parent_path();
  const fs::path candidates[] = {
      dir / library_name,
      dir / ".." / "inject" / library_name,
      dir / ".." / "lib" / library_name,
      dir / ".." / "lib" / "x86_64-linux-gnu" / library_name,
      dir / ".." / "lib64" / library_name,
  };
  for (const auto& c : candidates) {
    if (fs::is_regular_file(c, ec)) return fs::weakly_canonical(c, ec);
  }
  error = std::string("cannot find ") + std::string(library_name) + " next to " + exe.string() +
          " or in its build tree (it is built only when CUDA is found); pass "
          "--injection-library PATH";
  return std::nullopt;
}

// Note [Python programs load the PyTorch support]
// `streamsan run -- python train.py` must work without any set-up, so a
// program that is a Python interpreter (python*, or a launcher such as
// pytest or torchrun, or a script whose shebang names python) gets
// streamsan's Python folder first on PYTHONPATH. That folder holds the
// streamsan_torch package and a sitecustomize.py that first runs the
// sitecustomize it shadows (the user's or the distribution's), then arms an
// import hook that loads the PyTorch support when the program imports torch
// (python/streamsan_torch/__init__.py). Nothing else changes: a program that
// never imports torch only pays the hook's installation.
bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool names_python(std::string_view base) {
  return injection::names_python_interpreter(base) || base == "pytest" ||
         starts_with(base, "py.test") || base == "torchrun" || base == "accelerate" ||
         base == "deepspeed" || base == "ipython" || base == "jupyter";
}

// The file PATH finds for `name` (or `name` itself when it has a slash).
std::optional<fs::path> resolve_program(const std::string& name) {
  std::error_code ec;
  if (name.find('/') != std::string::npos) return fs::path(name);
  const char* path = std::getenv("PATH");
  std::string_view rest = path != nullptr ? path : "/usr/bin:/bin";
  while (true) {
    const auto colon = rest.find(':');
    const fs::path dir(std::string(rest.substr(0, colon)));
    const fs::path candidate = (dir.empty() ? fs::path(".") : dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0 && fs::is_regular_file(candidate, ec)) {
      return candidate;
    }
    if (colon == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(colon + 1);
  }
}

bool is_python_program(const std::vector<std::string>& program) {
  if (program.empty()) return false;
  if (names_python(fs::path(program[0]).filename().string())) return true;
  const auto file = resolve_program(program[0]);
  if (!file) return false;
  std::error_code ec;
  if (names_python(fs::canonical(*file, ec).filename().string())) return true;
  std::ifstream in(*file, std::ios::binary);
  char head[256] = {};
  in.read(head, sizeof head - 1);
  const auto read = static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0));
  const std::string_view first_line(head, read);
  if (!starts_with(first_line, "#!")) return false;
  const auto line_end = first_line.find('\n');
  return first_line.substr(0, line_end).find("python") != std::string_view::npos;
}

// streamsan's Python folder: next to the binary (installed, or carried to
// a GPU machine), in share/, or in the build tree.
std::optional<fs::path> find_python_support() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  const fs::path dir = exe.parent_path();
  const fs::path candidates[] = {dir / "python", dir / ".." / "share" / "streamsan" / "python",
                                 dir / ".." / "python"};
  for (const auto& c : candidates) {
    if (fs::is_regular_file(c / "streamsan_torch" / "__init__.py", ec)) {
      return fs::weakly_canonical(c, ec);
    }
  }
  return std::nullopt;
}

void prepare_python(const std::vector<std::string>& program) {
  if (!is_python_program(program)) return;
  const auto support = find_python_support();
  if (!support) {
    std::cerr << "streamsan: the PyTorch support (python/streamsan_torch) is not next to "
                 "streamsan; Python frames and tensor footprints are off\n";
    return;
  }
  const char* old = std::getenv("PYTHONPATH");
  std::string value = support->string();
  if (old != nullptr && *old != '\0') value += std::string(":") + old;
  ::setenv("PYTHONPATH", value.c_str(), 1);
}

volatile sig_atomic_t child_pid = 0;

// Signals sent to streamsan on purpose (kill, timeout) go on to the program.
// Signals the terminal sends reach the whole process group already, so they
// are not sent twice.
void forward_signal(int sig, siginfo_t* info, void*) {
  const bool from_terminal = info != nullptr && info->si_code == SI_KERNEL;
  if (child_pid > 0 && !from_terminal) ::kill(child_pid, sig);
}

// Note [No signal lost while the program starts]
// A signal that came after the handlers were installed and before
// child_pid was set went nowhere: the handler had no child to send it to,
// and streamsan, handling it, did not die either, so `kill streamsan`
// right after the start left the program running (seen once, under ASan
// on a loaded machine: RunCommand.SignalsAreForwardedToTheProgram ran its
// `sleep 20` to the end). So the forwarded signals are blocked from before
// the handlers are installed until child_pid is set: one sent meanwhile
// waits, and is forwarded once unblocked. The child puts the default
// dispositions back and unblocks before its exec (the mask would survive
// the exec), so a signal sent to it directly acts as it would on the
// program.
class signal_forwarding {
 public:
  signal_forwarding() {
    sigset_t forwarded;
    sigemptyset(&forwarded);
    for (const int s : signals_) sigaddset(&forwarded, s);
    ::sigprocmask(SIG_BLOCK, &forwarded, &mask_before_);
    struct sigaction sa {};
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (std::size_t i = 0; i < std::size(signals_); ++i) {
      ::sigaction(signals_[i], &sa, &previous_[i]);
    }
  }
  signal_forwarding(const signal_forwarding&) = delete;
  signal_forwarding& operator=(const signal_forwarding&) = delete;
  ~signal_forwarding() {
    unblock();
    restore_handlers();
  }

  // In the parent, once child_pid is set: what came meanwhile is forwarded.
  void unblock() noexcept {
    if (std::exchange(blocked_, false)) ::sigprocmask(SIG_SETMASK, &mask_before_, nullptr);
  }
  // In the child, before its exec.
  void reset_in_child() noexcept {
    restore_handlers();
    unblock();
  }

 private:
  void restore_handlers() noexcept {
    for (std::size_t i = 0; i < std::size(signals_); ++i) {
      ::sigaction(signals_[i], &previous_[i], nullptr);
    }
  }

  static constexpr int signals_[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
  struct sigaction previous_[std::size(signals_)] {};
  sigset_t mask_before_{};
  bool blocked_ = true;
};

// A temporary file that is removed when the run is over.
class temp_file {
 public:
  temp_file() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/streamsan-run-XXXXXX";
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) {
      throw std::runtime_error("cannot create a result file in " + pattern + ": " +
                               std::strerror(errno));
    }
    ::close(fd);
    path_ = std::move(pattern);
  }
  temp_file(const temp_file&) = delete;
  temp_file& operator=(const temp_file&) = delete;
  ~temp_file() { ::unlink(path_.c_str()); }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// fork + exec; an exec failure comes back through a close-on-exec pipe.
// Returns the program's exit status, or nullopt when it could not be run.
// Set by spawn_and_wait: the program died by a signal (its status is then
// 128 + the signal).
bool program_killed = false;

std::optional<int> spawn_and_wait(const std::vector<std::string>& program) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    std::cerr << "streamsan run: pipe: " << std::strerror(errno) << '\n';
    return std::nullopt;
  }
  std::vector<char*> argv;
  for (const auto& a : program) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  signal_forwarding forwarding;
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::cerr << "streamsan run: fork: " << std::strerror(errno) << '\n';
    return std::nullopt;
  }
  if (pid == 0) {
    forwarding.reset_in_child();
    ::close(pipe_fds[0]);
    ::execvp(argv[0], argv.data());
    const int err = errno;
    (void)!::write(pipe_fds[1], &err, sizeof err);
    ::_exit(exit_code::cannot_run);
  }
  child_pid = pid;
  forwarding.unblock();  // Note [No signal lost while the program starts]
  ::close(pipe_fds[1]);
  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(pipe_fds[0], &exec_errno, sizeof exec_errno);
  } while (n < 0 && errno == EINTR);
  ::close(pipe_fds[0]);

  int wait_status = 0;
  while (::waitpid(pid, &wait_status, 0) < 0) {
    if (errno != EINTR) {
      std::cerr << "streamsan run: waitpid: " << std::strerror(errno) << '\n';
      child_pid = 0;
      return std::nullopt;
    }
  }
  child_pid = 0;
  if (n == sizeof exec_errno) {
    std::cerr << "streamsan run: cannot run '" << program[0] << "': "
              << std::strerror(exec_errno) << '\n';
    return std::nullopt;
  }
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    std::cerr << "streamsan run: the program was killed by signal " << sig << " ("
              << strsignal(sig) << ")\n";
    program_killed = true;
    return 128 + sig;
  }
  return WEXITSTATUS(wait_status);
}

// Once per run: how the program's own host reads and writes were checked
// (docs/tsan-bridge.md).
// `tsan_only`: only that ThreadSanitizer checked them (--log-path).
void print_host_access_note(const injection::run_summary& summary, bool tsan_only) {
  constexpr const char* checked_by_tsan =
      "streamsan: ThreadSanitizer checked the program's host accesses against device work (its "
      "reports, if any, are above)\n";
  if (tsan_only) {
    if (summary.host_accesses_by_tsan > 0) std::cerr << checked_by_tsan;
    return;
  }
  if (summary.host_accesses_by_annotations > 0 &&
      summary.host_accesses_tsan_off == summary.host_accesses_by_annotations) {
    std::cerr << "streamsan: host accesses were seen only through annotations "
                 "(include/streamsan/annotate.h): the program carries ThreadSanitizer, but the "
                 "bridge was off (the note above says why; docs/tsan-bridge.md)\n";
  } else if (summary.host_accesses_by_annotations > 0) {
    std::cerr << "streamsan: host accesses were seen only through annotations "
                 "(include/streamsan/annotate.h); build the program with -fsanitize=thread to "
                 "have ThreadSanitizer check them against device work (docs/tsan-bridge.md)\n";
  } else if (summary.host_accesses_by_tsan > 0) {
    std::cerr << checked_by_tsan;
  } else if (summary.host_accesses_unchecked_python > 0) {
    std::cerr << "streamsan: the host reads and writes of Python code were not checked against "
                 "device work (outside PyTorch's tensors nothing tells them; docs/pytorch.md, "
                 "Limits)\n";
  }
}

// Note [Reports of several processes]: with a path option without "%p",
// every process but the started one wrote PATH.<pid>; said once, so that
// no report goes unread.
void list_other_processes_files(const injection::run_summary& summary, const std::string& path,
                                const char* what) {
  if (path.empty() || injection::has_pid_placeholder(path)) return;
  std::vector<std::string> found;
  for (const std::int64_t pid : summary.finished_pids) {
    const std::string file = injection::own_path(path, pid, true);
    std::error_code error;
    if (std::filesystem::exists(file, error)) found.push_back(file);
  }
  if (found.empty()) return;
  std::cerr << "streamsan: the " << what << " of " << found.size() << " other sanitized process"
            << (found.size() == 1 ? "" : "es") << " (" << path << " has no %p):";
  for (const auto& file : found) std::cerr << ' ' << file;
  std::cerr << '\n';
}

}  // namespace

int run_command(std::span<const std::string> args) {
  int status = exit_code::ok;
  const char* env = std::getenv(std::string(injection::options_variable).c_str());
  const auto req = parse_run_request(args, env ? std::optional<std::string_view>(env) : std::nullopt,
                                     std::cout, std::cerr, status);
  if (!req) return status;
  if (const auto bad = check_library_variables(
          [](std::string_view name) { return std::getenv(std::string(name).c_str()); })) {
    std::cerr << "streamsan run: " << *bad << '\n';
    return exit_code::usage;
  }

  std::string error;
  const auto library = find_injection_library(req->library, error);
  if (!library) {
    std::cerr << "streamsan run: " << error << '\n';
    return exit_code::cannot_run;
  }

  temp_file result;
  ::setenv("CUDA_INJECTION64_PATH", library->c_str(), 1);
  // NVTX ranges reach the library through the same file (it hands NVTX on to
  // CUPTI); a user's own NVTX tool keeps priority.
  ::setenv("NVTX_INJECTION64_PATH", library->c_str(), 0);
  ::setenv(std::string(injection::options_variable).c_str(),
           injection::to_string(req->options).c_str(), 1);
  ::setenv(std::string(injection::result_file_variable).c_str(), result.path().c_str(), 1);
  // Note [Reports of several processes]: the program this run starts is
  // our child; a sanitized process whose parent is not us names itself.
  ::setenv(std::string(injection::run_pid_variable).c_str(), std::to_string(::getpid()).c_str(),
           1);
  if (!req->no_python) prepare_python(req->program);

  const auto program_status = spawn_and_wait(req->program);
  if (!program_status) return exit_code::cannot_run;

  const auto summary = injection::read_run_summary(result.path());
  // A process may start the library without using CUDA (an NVTX call).
  const bool no_cuda = summary.processes_started == 0 ||
                       (summary.processes_finished == summary.processes_started &&
                        summary.cuda_calls == 0);
  if (no_cuda) {
    std::cerr << "streamsan: the program made no CUDA calls\n";
  } else if (summary.processes_finished < summary.processes_started) {
    std::cerr << "streamsan: " << (summary.processes_started - summary.processes_finished)
              << " sanitized process(es) ended before printing a report; their "
                 "diagnostics are lost\n";
  }
  // With --log-path the program's stderr stays the program's own (issue #12:
  // the program is not changed): advice about annotations comes only with a
  // report printed to stderr. That ThreadSanitizer checked the run is said
  // always: its reports are on stderr already.
  if (!no_cuda) print_host_access_note(summary, !req->options.log_path.empty());
  list_other_processes_files(summary, req->options.log_path, "reports");
  list_other_processes_files(summary, req->options.record, "traces");
  // A program killed by a signal ends with that death (128 + the signal),
  // whatever was found: the death is the news (Note [Reports when the
  // program dies]); the report says what was found before it.
  if (!program_killed && summary.diagnostics > 0 && req->options.error_exitcode != 0) {
    return req->options.error_exitcode;
  }
  return *program_status;
}

}  // namespace streamsan::cli
