// What the program's thread pays in the footprint resolver under --precise
// (Note [Delivered outside the holding lock]): the pattern of cuSolverRf's
// wall-clock profile (H200, docs/injection.md), on the host. Per
// iteration the program's thread does `work` ns of its own (the read-back
// and the launch calls it makes anyway), then emits one awaited launch
// record and three records of other API calls. A decoding thread resolves
// each launch as soon as it is emitted, and the sink behind the resolver
// (the engine's ring) takes `sink` ns per launch. The sink is slower than
// nothing but faster than the program's thread, so a program thread that
// waits for deliveries loses time the engine could have overlapped.
//   build/bench/precise/resolver_bench
// range(0): the program's own work per launch in ns, range(1): the sink's
// per launch. Reported: the program thread's time per iteration.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <variant>

#include "inject/precise/footprint_resolver.h"
#include "sanitizer/log/recorder.h"

namespace streamsan::precise {
namespace {

void spin_for(std::chrono::nanoseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// The engine's ring: each launch costs it `per_launch`.
class slow_sink final : public record_sink {
 public:
  explicit slow_sink(std::chrono::nanoseconds per_launch) : per_launch_(per_launch) {}
  void on_record(const record& r) override {
    if (std::holds_alternative<kernel_launch>(r.body)) spin_for(per_launch_);
  }

 private:
  std::chrono::nanoseconds per_launch_;
};

// Resolves tokens in the order handed over, on a thread of its own.
class decoding_thread {
 public:
  explicit decoding_thread(footprint_resolver& r) : resolver_(r), thread_([this] { run(); }) {}
  ~decoding_thread() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    ready_.notify_one();
    thread_.join();
  }
  void hand_over(footprint_resolver::token t) {
    {
      std::lock_guard lock(mutex_);
      tokens_.push_back(t);
    }
    ready_.notify_one();
  }

 private:
  void run() {
    for (;;) {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return done_ || !tokens_.empty(); });
      if (tokens_.empty()) return;
      const auto t = tokens_.front();
      tokens_.pop_front();
      lock.unlock();
      resolver_.resolve(t, std::nullopt);
    }
  }

  footprint_resolver& resolver_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<footprint_resolver::token> tokens_;
  bool done_ = false;
  std::thread thread_;
};

void BM_ResolverProgramThread(benchmark::State& state) {
  const std::chrono::nanoseconds work(state.range(0));
  const std::chrono::nanoseconds per_launch(state.range(1));
  recorder rec(recorder_options{false, 0});
  footprint_resolver resolver;
  slow_sink sink(per_launch);
  resolver.add_downstream(sink);
  rec.add_sink(resolver);
  decoding_thread decoder(resolver);
  for (auto _ : state) {
    spin_for(work);
    const auto t = resolver.await_next_launch();
    rec.emit(kernel_launch{stream_id{1}, string_id{}, {}});
    decoder.hand_over(t);
    for (int i = 0; i < 3; ++i) rec.emit(stream_query{stream_id{1}, true});
  }
}
BENCHMARK(BM_ResolverProgramThread)
    ->Args({5000, 0})
    ->Args({5000, 2000})
    ->Args({5000, 4000})
    ->UseRealTime();

// The default mode's common case: nothing awaited, nothing held, so each
// record passes through without the resolver's lock (Note [Nothing held,
// no lock]). Reported: one record's way from the recorder to the sink.
void BM_ResolverNothingHeld(benchmark::State& state) {
  recorder rec(recorder_options{false, 0});
  footprint_resolver resolver;
  slow_sink sink(std::chrono::nanoseconds(0));
  resolver.add_downstream(sink);
  rec.add_sink(resolver);
  for (auto _ : state) rec.emit(stream_query{stream_id{1}, true});
}
BENCHMARK(BM_ResolverNothingHeld);

}  // namespace
}  // namespace streamsan::precise

BENCHMARK_MAIN();
