// Replays the synthetic log of synthetic_log.h a fixed number of periods,
// for profilers whose figures must not depend on timing (Google Benchmark
// picks its iteration counts by the clock). After the setup and one
// warm-up period (the histories reach their steady size), it replays N
// periods in replay(), which a profiler can isolate:
//   valgrind --tool=callgrind --toggle-collect='*replay*'
//       build/bench/engine/engine_replay 20   (one command line)
// Instructions per launch = the collected Ir / the launches it prints.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "bench/engine/synthetic_log.h"
#include "sanitizer/engine/engine.h"

namespace streamsan {
namespace {

void feed(engine& eng, const std::vector<record>& records) {
  for (const record& r : records) eng.on_record(r);
}

[[gnu::noinline]] void replay(engine& eng, const bench::synthetic_log& log, int periods) {
  for (int i = 0; i < periods; ++i) feed(eng, log.period);
}

}  // namespace
}  // namespace streamsan

int main(int argc, char** argv) {
  using namespace streamsan;
  const int periods = argc > 1 ? std::atoi(argv[1]) : 20;
  const bool racy = argc > 2 && std::string_view(argv[2]) == "racy";
  if (periods <= 0) {
    std::fprintf(stderr, "usage: engine_replay [PERIODS > 0] [racy]\n");
    return 2;
  }
  const bench::synthetic_log log = bench::make_synthetic_log(racy);
  engine eng;
  feed(eng, log.setup);
  feed(eng, log.period);
  replay(eng, log, periods);
  std::printf("%llu launches replayed in %d periods, %zu diagnostics\n",
              static_cast<unsigned long long>(log.launches_per_period) *
                  static_cast<unsigned long long>(periods),
              periods, eng.diagnostics().size());
  return 0;
}
