// Throughput and memory of the happens-before engine on the synthetic log
// of synthetic_log.h (a training step loop: 8 streams, 1,000 live buffers,
// 3 accesses per launch, an event record and wait every 16 launches).
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstdint>
#include <vector>

#include "bench/engine/synthetic_log.h"
#include "sanitizer/engine/engine.h"

namespace streamsan {
namespace {

using bench::synthetic_log;

void feed(engine& eng, const std::vector<record>& records) {
  for (const record& r : records) eng.on_record(r);
}

void launch_throughput(benchmark::State& state, bool racy, engine_options options = {}) {
  const synthetic_log log = bench::make_synthetic_log(racy);
  engine eng(options);
  feed(eng, log.setup);
  for (auto _ : state) feed(eng, log.period);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(log.launches_per_period));
  state.counters["records_per_launch"] =
      static_cast<double>(log.period.size()) / static_cast<double>(log.launches_per_period);
  state.counters["diagnostics"] = static_cast<double>(eng.diagnostics().size());
}

void BM_EngineLaunches(benchmark::State& state) { launch_throughput(state, false); }
BENCHMARK(BM_EngineLaunches)->Unit(benchmark::kMillisecond);

void BM_EngineLaunchesAllRacing(benchmark::State& state) { launch_throughput(state, true); }
BENCHMARK(BM_EngineLaunchesAllRacing)->Unit(benchmark::kMillisecond);

// What the operation window for race timelines costs when a report format
// asks for it (--format html / chrome-trace; off otherwise).
void BM_EngineLaunchesWithTimeline(benchmark::State& state) {
  engine_options options;
  options.timeline_window = default_timeline_window;
  launch_throughput(state, false, options);
}
BENCHMARK(BM_EngineLaunchesWithTimeline)->Unit(benchmark::kMillisecond);

// Memory must stay flat as the log grows for a fixed set of live
// allocations: run N records through a fresh engine and report what it holds.
// heap_bytes is the growth of the process heap (mallinfo2) across the run,
// i.e. everything the engine allocated and still holds.
void BM_EngineMemoryFlatness(benchmark::State& state) {
  const synthetic_log log = bench::make_synthetic_log(false);
  const auto target = static_cast<std::uint64_t>(state.range(0));
  engine_statistics stats;
  double heap_bytes = 0;
  for (auto _ : state) {
    const auto heap_before = mallinfo2().uordblks;
    engine eng;
    feed(eng, log.setup);
    while (eng.records_processed() < target) feed(eng, log.period);
    stats = eng.statistics();
    heap_bytes = static_cast<double>(mallinfo2().uordblks - heap_before);
  }
  state.counters["records"] = static_cast<double>(stats.records);
  state.counters["heap_bytes"] = heap_bytes;
  state.counters["history_bytes"] = static_cast<double>(stats.history_bytes);
  state.counters["clock_bytes"] = static_cast<double>(stats.clock_bytes);
  state.counters["segments"] = static_cast<double>(stats.history_segments);
  state.counters["reads"] = static_cast<double>(stats.history_reads);
}
BENCHMARK(BM_EngineMemoryFlatness)
    ->Arg(1'000'000)
    ->Arg(10'000'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace streamsan

BENCHMARK_MAIN();
