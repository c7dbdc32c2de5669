// Memory of the happens-before engine when streams and host threads come
// and go (issue #16 item 2; Note [Retiring context slots]).
//
// BM_EngineStreamChurn: one host thread, 8 live 1 MiB buffers; each cycle
// creates a stream, launches a kernel that reads one buffer and writes
// another, synchronizes the stream and destroys it.
//
// BM_EngineThreadChurn: the same work, each cycle on a new host thread (a
// pool that hands work over): the thread creates a stream, waits on the
// event its predecessor recorded, launches, records the event, synchronizes,
// destroys the stream and ends (thread_exit). The handover event orders
// every kernel after the previous one, so neither log has a race.
//
// Each run feeds a fresh engine N cycles (records built on the fly, so the
// log itself takes no memory) and reports what the engine holds at the end:
// clock_bytes (engine_statistics), slots (clock slots in use), heap_bytes
// (growth of the process heap across the run, mallinfo2) and rss_bytes (the
// process's resident memory at the end, /proc/self/statm). Flat means the
// same at 1k, 10k and 100k cycles.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <fstream>

#include "sanitizer/engine/engine.h"

namespace streamsan {
namespace {

constexpr int buffer_count = 8;
constexpr std::uint64_t buffer_size = 1 << 20;

double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

class churn {
 public:
  churn() {
    feed(main_thread_, thread_start{});
    for (int b = 0; b < buffer_count; ++b) {
      feed(main_thread_, alloc_record{.alloc = alloc_id{static_cast<std::uint32_t>(b + 1)},
                                      .size = buffer_size});
    }
    feed(main_thread_, event_create{handover_, event_flag_none});
  }

  void stream_cycle(std::uint64_t i) {
    const stream_id s{++last_stream_};
    feed(main_thread_, stream_create{s, 0, stream_flavor::non_blocking, 0});
    launch(main_thread_, s, i);
    feed(main_thread_, stream_synchronize{s});
    feed(main_thread_, stream_destroy{s});
  }

  void thread_cycle(std::uint64_t i) {
    const thread_id t{++last_thread_};
    const stream_id s{++last_stream_};
    feed(t, thread_start{});
    feed(t, stream_create{s, 0, stream_flavor::non_blocking, 0});
    if (i > 0) feed(t, event_wait{handover_, s});
    launch(t, s, i);
    feed(t, event_record{handover_, s});
    feed(t, stream_synchronize{s});
    feed(t, stream_destroy{s});
    feed(t, thread_exit{});
  }

  const engine& eng() const noexcept { return eng_; }

 private:
  void feed(thread_id t, record_body body) { eng_.on_record(record{{++seq_, t, stack_id{}}, body}); }
  void launch(thread_id t, stream_id s, std::uint64_t i) {
    const auto b = static_cast<std::uint32_t>(i % buffer_count);
    accesses_ = {access{{alloc_id{1 + (b + 1) % buffer_count}, 0, buffer_size}, access_mode::read},
                 access{{alloc_id{1 + b}, 0, buffer_size}, access_mode::write}};
    feed(t, kernel_launch{s, string_id{}, accesses_});
  }

  engine eng_;
  std::uint64_t seq_ = 0;
  const thread_id main_thread_{1};
  std::uint32_t last_thread_ = 1;
  std::uint32_t last_stream_ = 0;
  const event_id handover_{1};
  std::array<access, 2> accesses_{};
};

template <class Cycle>
void churn_memory(benchmark::State& state, Cycle cycle) {
  const auto cycles = static_cast<std::uint64_t>(state.range(0));
  engine_statistics stats;
  double heap_bytes = 0, rss_bytes = 0;
  for (auto _ : state) {
    const auto heap_before = mallinfo2().uordblks;
    churn c;
    for (std::uint64_t i = 0; i < cycles; ++i) cycle(c, i);
    stats = c.eng().statistics();
    heap_bytes = static_cast<double>(mallinfo2().uordblks - heap_before);
    rss_bytes = resident_bytes();
    if (!c.eng().diagnostics().empty()) state.SkipWithError("the churn log raced");
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(cycles));
  state.counters["clock_bytes"] = static_cast<double>(stats.clock_bytes);
  state.counters["slots"] = static_cast<double>(stats.context_slots);
  state.counters["retired"] = static_cast<double>(stats.retired_contexts);
  state.counters["heap_bytes"] = heap_bytes;
  state.counters["rss_bytes"] = rss_bytes;
}

void BM_EngineStreamChurn(benchmark::State& state) {
  churn_memory(state, [](churn& c, std::uint64_t i) { c.stream_cycle(i); });
}
BENCHMARK(BM_EngineStreamChurn)
    ->Arg(1'000)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_EngineThreadChurn(benchmark::State& state) {
  churn_memory(state, [](churn& c, std::uint64_t i) { c.thread_cycle(i); });
}
BENCHMARK(BM_EngineThreadChurn)
    ->Arg(1'000)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace streamsan
