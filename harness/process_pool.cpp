#include "harness/process_pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace streamsan::harness {
namespace {

using clock_type = std::chrono::steady_clock;

struct child {
  std::size_t index = 0;
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
  clock_type::time_point started;
  process_result result;
};

void close_fd(int& fd) noexcept {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Starts one child with stdout and stderr on pipes; false on failure (the
// reason in c.result.err).
bool spawn(const std::string& executable, const std::vector<std::string>& args, child& c) {
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    c.result.err = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    c.result.err = std::string("pipe: ") + std::strerror(errno);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(executable.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int rc = ::posix_spawn(&c.pid, executable.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  c.out_fd = out_pipe[0];
  c.err_fd = err_pipe[0];
  c.started = clock_type::now();
  if (rc != 0) {
    c.result.err = "cannot start " + executable + ": " + std::strerror(rc);
    close_fd(c.out_fd);
    close_fd(c.err_fd);
    return false;
  }
  return true;
}

// Reads what is available; closes the fd at end of file.
void drain(int& fd, std::string& into) {
  char buf[65536];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    into.append(buf, static_cast<std::size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    close_fd(fd);
  }
}

void reap(child& c) {
  int status = 0;
  while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) c.result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) c.result.signal = WTERMSIG(status);
  c.result.seconds = std::chrono::duration<double>(clock_type::now() - c.started).count();
}

}  // namespace

std::string describe_end(const process_result& r) {
  if (r.timed_out) return "killed after " + std::to_string(static_cast<int>(r.seconds)) + " s";
  if (r.signal != 0) return "signal " + std::to_string(r.signal) + " (" + strsignal(r.signal) + ")";
  return "exit code " + std::to_string(r.exit_code);
}

void run_processes(const std::string& executable,
                   const std::vector<std::vector<std::string>>& arguments, unsigned jobs,
                   double timeout_seconds,
                   const std::function<void(std::size_t, process_result)>& on_done) {
  std::vector<child> running;
  std::size_t next = 0;
  jobs = jobs == 0 ? 1 : jobs;
  while (next < arguments.size() || !running.empty()) {
    while (running.size() < jobs && next < arguments.size()) {
      child c;
      c.index = next++;
      if (spawn(executable, arguments[c.index], c)) {
        running.push_back(std::move(c));
      } else {
        c.result.exit_code = 127;
        on_done(c.index, std::move(c.result));
      }
    }
    if (running.empty()) continue;
    std::vector<pollfd> fds;
    for (const auto& c : running) {
      if (c.out_fd >= 0) fds.push_back({c.out_fd, POLLIN, 0});
      if (c.err_fd >= 0) fds.push_back({c.err_fd, POLLIN, 0});
    }
    if (!fds.empty()) ::poll(fds.data(), fds.size(), 200);
    for (std::size_t i = 0; i < running.size();) {
      child& c = running[i];
      for (const auto& p : fds) {
        if (p.revents == 0) continue;
        if (p.fd == c.out_fd) drain(c.out_fd, c.result.out);
        if (p.fd == c.err_fd) drain(c.err_fd, c.result.err);
      }
      const double age = std::chrono::duration<double>(clock_type::now() - c.started).count();
      if (age > timeout_seconds && !c.result.timed_out) {
        c.result.timed_out = true;
        ::kill(c.pid, SIGKILL);
      }
      if (c.out_fd < 0 && c.err_fd < 0) {
        reap(c);
        on_done(c.index, std::move(c.result));
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      ++i;
    }
  }
}

}  // namespace streamsan::harness
