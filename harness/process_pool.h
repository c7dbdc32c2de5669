// Runs child processes, a bounded number at a time, collecting each one's
// stdout, stderr and exit status (Note [Worker processes] in test_run.h).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace streamsan::harness {

struct process_result {
  int exit_code = -1;   // when it exited
  int signal = 0;       // when a signal ended it
  bool timed_out = false;
  std::string out;
  std::string err;
  double seconds = 0;
};

// "exit code 3", "signal 11 (Segmentation fault)", "killed after 300 s".
std::string describe_end(const process_result& r);

// Runs `executable` with each argument list; at most `jobs` at once;
// `on_done(index, result)` on the calling thread as each one ends. A child
// that fails to start is reported as exit code 127 with the reason in err.
void run_processes(const std::string& executable,
                   const std::vector<std::vector<std::string>>& arguments, unsigned jobs,
                   double timeout_seconds,
                   const std::function<void(std::size_t, process_result)>& on_done);

}  // namespace streamsan::harness
