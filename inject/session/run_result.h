// How the injection library tells `streamsan run` what it found.
//
// Note [The result file]
// `streamsan run` creates an empty file and names it in STREAMSAN_RESULT_FILE.
// Every sanitized process of the run (a script may start several) appends one
// "started" line when the library initializes and one "finished" line when it
// has printed its report at exit, each with a single O_APPEND write, so lines
// of concurrent processes never interleave. `streamsan run` sums the finished
// lines to choose its exit status, and reads "no line at all" as "the program
// never initialized CUDA" (the driver loads the library at cuInit only).
// A process that started but never finished was killed or called _exit before
// the report: that is said, never taken as "no diagnostics".
//
// Header-only: the CLI reads what the library writes.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace streamsan::injection {

inline constexpr std::string_view result_file_variable = "STREAMSAN_RESULT_FILE";

struct process_result {
  std::int64_t pid = 0;
  std::uint64_t cuda_calls = 0;
  std::uint64_t diagnostics = 0;  // after suppressions
  std::uint64_t unmodelled_calls = 0;
  // How host accesses were seen (docs/tsan-bridge.md): "tsan" (the bridge),
  // "torch" (the PyTorch support tells tensors' host accesses: CPU
  // operators, .numpy(), .tolist()), "interpreter" (a Python interpreter
  // without it: the host accesses of Python code go unchecked, and no
  // rebuild would check them), "annotations", or
  // "annotations-tsan-off" (a TSan build whose bridge was refused or turned
  // off).
  std::string_view host_accesses = "annotations";
};

inline std::string started_line(std::int64_t pid) {
  return "started pid=" + std::to_string(pid) + "\n";
}

inline std::string finished_line(const process_result& r) {
  return "finished pid=" + std::to_string(r.pid) + " cuda_calls=" +
         std::to_string(r.cuda_calls) + " diagnostics=" + std::to_string(r.diagnostics) +
         " unmodelled=" + std::to_string(r.unmodelled_calls) +
         " host_accesses=" + std::string(r.host_accesses) + "\n";
}

// One write(2) with O_APPEND: atomic with respect to other appenders.
inline bool append_result_line(const std::string& path, const std::string& line) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const auto written = ::write(fd, line.data(), line.size());
  ::close(fd);
  return written == static_cast<ssize_t>(line.size());
}

struct run_summary {
  std::uint32_t processes_started = 0;
  std::uint32_t processes_finished = 0;
  std::uint64_t cuda_calls = 0;
  std::uint64_t diagnostics = 0;
  std::uint64_t unmodelled_calls = 0;
  std::uint32_t malformed_lines = 0;
  // Finished processes whose host accesses ThreadSanitizer checked, and
  // those (older libraries included) that saw them only through annotations.
  std::uint32_t host_accesses_by_tsan = 0;
  std::uint32_t host_accesses_by_annotations = 0;
  // Of those, built with ThreadSanitizer but with the bridge off.
  std::uint32_t host_accesses_tsan_off = 0;
  // Python processes whose tensors' host accesses the PyTorch support told.
  std::uint32_t host_accesses_by_torch = 0;
  // Python processes without the PyTorch support (CuPy, JAX): their Python
  // code's host accesses went unchecked.
  std::uint32_t host_accesses_unchecked_python = 0;
  // The pids of the finished processes, in the order they finished.
  std::vector<std::int64_t> finished_pids;
};

inline run_summary read_run_summary(const std::string& path) {
  run_summary s;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "started") {
      ++s.processes_started;
      continue;
    }
    if (kind != "finished") {
      ++s.malformed_lines;
      continue;
    }
    ++s.processes_finished;
    bool tsan = false, tsan_off = false, torch = false, interpreter = false;
    std::uint64_t calls = 0;
    std::string field;
    while (words >> field) {
      const auto eq = field.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = field.substr(0, eq);
      const std::uint64_t value = std::strtoull(field.c_str() + eq + 1, nullptr, 10);
      if (key == "cuda_calls") calls = value;
      if (key == "pid") s.finished_pids.push_back(static_cast<std::int64_t>(value));
      if (key == "diagnostics") s.diagnostics += value;
      if (key == "unmodelled") s.unmodelled_calls += value;
      if (key == "host_accesses") {
        tsan = field.substr(eq + 1) == "tsan";
        torch = field.substr(eq + 1) == "torch";
        interpreter = field.substr(eq + 1) == "interpreter";
        tsan_off = field.substr(eq + 1) == "annotations-tsan-off";
      }
    }
    s.cuda_calls += calls;
    // A process that made no CUDA call (torchrun's agent, which only loads
    // the library) checked no host access against device work.
    if (calls == 0) continue;
    ++(tsan          ? s.host_accesses_by_tsan
       : torch       ? s.host_accesses_by_torch
       : interpreter ? s.host_accesses_unchecked_python
                     : s.host_accesses_by_annotations);
    if (tsan_off) ++s.host_accesses_tsan_off;
  }
  return s;
}

}  // namespace streamsan::injection
