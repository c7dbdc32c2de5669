// The engine on its own thread (Note [The engine runs on its own thread]):
// what the producing thread pays per record through a queued_sink against
// feeding the engine itself, and how many records a second go through the
// queue to the engine, on the synthetic log of synthetic_log.h.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "bench/engine/synthetic_log.h"
#include "sanitizer/engine/engine.h"
#include "sanitizer/log/queued_sink.h"

namespace streamsan {
namespace {

using bench::synthetic_log;
using clock_type = std::chrono::steady_clock;

// The program's own work between two CUDA calls (a launch-bound loop makes
// one every few microseconds, in the driver): writes `touch_kib` KiB of a
// buffer larger than the caches, as the driver's work evicts streamsan's
// data, then spins until `ns` have passed.
void program_work(std::int64_t ns, std::int64_t touch_kib) {
  static std::vector<std::uint8_t> memory(64u << 20);
  static std::size_t at = 0;
  const auto until = clock_type::now() + std::chrono::nanoseconds(ns);
  for (std::int64_t line = 0; line < touch_kib * 16; ++line) {
    memory[at] += 1;
    at = (at + 64) % memory.size();
  }
  while (clock_type::now() < until) {
  }
}

// Seconds the producing thread spent in on_record alone, over one period of
// the log, with the program's work between records (range(0) ns, range(1)
// KiB written).
double producer_seconds(record_sink& sink, const std::vector<record>& period,
                        const benchmark::State& state) {
  const std::int64_t gap_ns = state.range(0), touch_kib = state.range(1);
  clock_type::duration spent{};
  for (const record& r : period) {
    if (gap_ns > 0 || touch_kib > 0) program_work(gap_ns, touch_kib);
    const auto start = clock_type::now();
    sink.on_record(r);
    spent += clock_type::now() - start;
  }
  return std::chrono::duration<double>(spent).count();
}

// The engine behind a started queue, the log's set-up given.
struct queued_engine {
  explicit queued_engine(const synthetic_log& log) {
    queue.add_downstream(eng);
    queue.start();
    for (const record& r : log.setup) queue.on_record(r);
  }
  engine eng;
  queued_sink queue;
};

void set_counters(benchmark::State& state, const synthetic_log& log) {
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(log.period.size()));
  state.counters["records_per_launch"] =
      static_cast<double>(log.period.size()) / static_cast<double>(log.launches_per_period);
}

// The program's work between records: none; 2 us; 2 us writing 16 KiB.
void program_paces(benchmark::internal::Benchmark* b) {
  b->Args({0, 0})->Args({2000, 0})->Args({2000, 16})->UseManualTime();
}

// Before: the producing thread runs the engine (the time shown is the
// producer's time only, per period of the log).
void BM_ProducerFeedsEngine(benchmark::State& state) {
  const synthetic_log log = bench::make_synthetic_log(false);
  engine eng;
  for (const record& r : log.setup) eng.on_record(r);
  for (auto _ : state) state.SetIterationTime(producer_seconds(eng, log.period, state));
  set_counters(state, log);
}
BENCHMARK(BM_ProducerFeedsEngine)->Apply(program_paces);

// After: the producing thread copies into the queue; the engine runs on the
// queue's thread. With no gap the producer waits for the engine whenever
// the ring is full (back-pressure), so it measures the engine's pace.
void BM_ProducerFeedsQueue(benchmark::State& state) {
  const synthetic_log log = bench::make_synthetic_log(false);
  queued_engine q(log);
  for (auto _ : state) {
    state.SetIterationTime(producer_seconds(q.queue, log.period, state));
  }
  q.queue.close();
  set_counters(state, log);
  const auto stats = q.queue.statistics();
  state.counters["producer_waits"] = static_cast<double>(stats.producer_waits);
  state.counters["wakeups"] = static_cast<double>(stats.wakeups);
  state.counters["sleeps"] = static_cast<double>(stats.consumer_sleeps);
  if (!q.eng.diagnostics().empty()) state.SkipWithError("the synthetic log must be race-free");
}
BENCHMARK(BM_ProducerFeedsQueue)->Apply(program_paces);

// End to end: records a second through the queue into the engine, the time
// running until the engine has taken the last one.
void BM_QueueThroughput(benchmark::State& state) {
  const synthetic_log log = bench::make_synthetic_log(false);
  queued_engine q(log);
  for (auto _ : state) {
    for (const record& r : log.period) q.queue.on_record(r);
    q.queue.flush();
  }
  q.queue.close();
  set_counters(state, log);
  state.counters["launches_per_second"] = benchmark::Counter(
      static_cast<double>(state.iterations() * log.launches_per_period), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_QueueThroughput)->Unit(benchmark::kMillisecond)->UseRealTime();

// The queue alone (a consumer that does nothing): its own cost per record.
class null_sink final : public record_sink {
 public:
  void on_record(const record& r) override { benchmark::DoNotOptimize(&r); }
};

void BM_QueueOnly(benchmark::State& state) {
  const synthetic_log log = bench::make_synthetic_log(false);
  null_sink none;
  queued_sink queue;
  queue.add_downstream(none);
  queue.start();
  for (auto _ : state) {
    state.SetIterationTime(producer_seconds(queue, log.period, state));
  }
  queue.close();
  set_counters(state, log);
}
BENCHMARK(BM_QueueOnly)->Apply(program_paces);

}  // namespace
}  // namespace streamsan
BENCHMARK_MAIN();
