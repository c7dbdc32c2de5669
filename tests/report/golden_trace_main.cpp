// streamsan-golden-trace NAME OUT: writes one of the golden CUDA-program
// traces (tests/report/golden_traces.h), to try the report formats by hand:
//   streamsan-golden-trace unrecorded_event t.trace
//   streamsan analyze t.trace --source-root /home/user/app --format html -o t.html
#include <exception>
#include <iostream>

#include "tests/report/golden_traces.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: streamsan-golden-trace NAME OUT\nnames:";
    for (const auto name : streamsan::testing::golden_trace_names()) std::cerr << ' ' << name;
    std::cerr << '\n';
    return 2;
  }
  try {
    streamsan::testing::write_golden_trace(argv[1], argv[2]);
  } catch (const std::exception& e) {
    std::cerr << "streamsan-golden-trace: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
