// Progress while scenarios run. On a terminal: one line, rewritten in
// place; otherwise (CI logs, pipes): one line per finished scenario.
#pragma once

#include <cstddef>
#include <ostream>

#include "harness/scenario_result.h"

namespace streamsan::harness {

class progress_display {
 public:
  progress_display(std::ostream& out, bool terminal) : out_(out), terminal_(terminal) {}

  void finished(const scenario_result& r, std::size_t done, std::size_t total);
  // Clears the in-place line before the summary is printed.
  void close();

 private:
  std::ostream& out_;
  bool terminal_;
  bool line_open_ = false;
  std::size_t failed_ = 0;
};

}  // namespace streamsan::harness
