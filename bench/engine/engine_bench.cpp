// Throughput and memory of the happens-before engine on a synthetic log.
//
// The log models a training step loop: 8 non-blocking streams, 1,000 live
// device buffers, kernel launches with 3 buffer accesses each (two reads,
// one write), and every 16 launches an event recorded on the launching
// stream and waited on by the next stream. Each stream writes only the
// buffers it owns and reads its own and 200 shared read-only buffers, so the
// log is race-free, as a real program mostly is: this measures the hot path
// (lookups, clock joins, history checks), not report building.
//
// The log is built once in memory (records whose spans point into stable
// storage) and fed straight to engine::on_record, as a recorder would.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstdint>
#include <vector>

#include "sanitizer/engine/engine.h"

namespace streamsan {
namespace {

constexpr int stream_count = 8;
constexpr int buffer_count = 1000;
constexpr int shared_buffers = 200;  // read by every stream
constexpr int owned_per_stream = (buffer_count - shared_buffers) / stream_count;
constexpr std::uint64_t buffer_size = 1 << 20;
constexpr int launches_per_event = 16;
// One period of the replayed loop; buffer choices repeat after it.
constexpr int period_launches = 16 * stream_count * owned_per_stream;

struct synthetic_log {
  std::vector<record> setup;   // threads, streams, events, allocations
  std::vector<record> period;  // launches + event records/waits, replayable
  std::vector<access> accesses;  // what the launches' spans point into
  std::uint64_t launches_per_period = 0;
};

alloc_id buffer(int index) { return alloc_id{static_cast<std::uint32_t>(index + 1)}; }
stream_id stream(int index) { return stream_id{static_cast<std::uint32_t>(index + 1)}; }

// `racy`: every launch also writes a shared buffer, so every launch races
// (the report and deduplication path).
synthetic_log make_log(bool racy) {
  synthetic_log log;
  const thread_id main_thread{1};
  std::uint64_t seq = 0;
  const auto add = [&](std::vector<record>& to, record_body body) {
    to.push_back(record{{++seq, main_thread, stack_id{}}, body});
  };
  add(log.setup, string_define{string_id{1}, "gemm"});
  add(log.setup, thread_start{});
  for (int s = 0; s < stream_count; ++s) {
    add(log.setup, stream_create{stream(s), 0, stream_flavor::non_blocking, 0});
    add(log.setup, event_create{event_id{static_cast<std::uint32_t>(s + 1)}, event_flag_none});
  }
  for (int b = 0; b < buffer_count; ++b) {
    add(log.setup, alloc_record{.alloc = buffer(b), .kind = memory_kind::device,
                                .size = buffer_size, .address = 0x7f0000000000ull + b * buffer_size});
  }

  log.accesses.reserve(static_cast<std::size_t>(period_launches) * 3);
  for (int i = 0; i < period_launches; ++i) {
    const int s = i % stream_count;
    const int k = i / stream_count;  // the launch's index on its stream
    const int owned_base = shared_buffers + s * owned_per_stream;
    const access* first = log.accesses.data() + log.accesses.size();
    log.accesses.push_back({{buffer((i * 7) % shared_buffers), 0, buffer_size}, access_mode::read});
    log.accesses.push_back(
        {{buffer(owned_base + (k * 3) % owned_per_stream), 0, buffer_size}, access_mode::read});
    if (racy) {
      log.accesses.push_back({{buffer(i % shared_buffers), 0, buffer_size}, access_mode::write});
    } else {
      log.accesses.push_back(
          {{buffer(owned_base + (k * 7 + 1) % owned_per_stream), 0, buffer_size},
           access_mode::write});
    }
    add(log.period, kernel_launch{stream(s), string_id{1}, {first, 3}});
    ++log.launches_per_period;
    if (i % launches_per_event == launches_per_event - 1) {
      const event_id e{static_cast<std::uint32_t>(s + 1)};
      add(log.period, event_record{e, stream(s)});
      add(log.period, event_wait{e, stream((s + 1) % stream_count)});
    }
  }
  return log;
}

void feed(engine& eng, const std::vector<record>& records) {
  for (const record& r : records) eng.on_record(r);
}

void launch_throughput(benchmark::State& state, bool racy, engine_options options = {}) {
  const synthetic_log log = make_log(racy);
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
  const synthetic_log log = make_log(false);
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
