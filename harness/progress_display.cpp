#include "harness/progress_display.h"

#include <cstdio>

namespace streamsan::harness {

void progress_display::finished(const scenario_result& r, std::size_t done, std::size_t total) {
  if (r.status == result_status::failed) ++failed_;
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f s", r.seconds);
  const std::string counter = "[" + std::to_string(done) + "/" + std::to_string(total) + "]";
  if (terminal_) {
    // \r and "erase line": the next scenario overwrites this one. A failure
    // gets a line of its own that stays.
    if (r.status == result_status::failed) {
      out_ << "\r\033[K" << to_string(r.status) << ' ' << r.name << " (" << r.backend << ")\n";
    }
    out_ << "\r\033[K" << counter << ' ' << (failed_ > 0 ? std::to_string(failed_) + " failed, " : "")
         << to_string(r.status) << ' ' << r.name << " (" << r.backend << ')' << std::flush;
    line_open_ = true;
    return;
  }
  out_ << counter << ' ' << to_string(r.status) << ' ' << r.name << " (" << r.backend << ", "
       << seconds << ")\n";
}

void progress_display::close() {
  if (line_open_) out_ << "\r\033[K" << std::flush;
  line_open_ = false;
}

}  // namespace streamsan::harness
