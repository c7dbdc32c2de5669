// Host-side cost of the injection library's work per CUDA call, without
// CUPTI or a GPU: stack capture, and a modelled kernel launch (access
// inference + recorder + live engine), in the launch pattern of
// launch_bound.cu. The GPU-side table is produced by overhead.sh.
#include <benchmark/benchmark.h>

#include <array>

#include "inject/model/cuda_model.h"
#include "inject/stack/fast_unwinder.h"
#include "sanitizer/engine/engine.h"
#include "tests/inject/fake_driver.h"

namespace streamsan::injection {
namespace {

__attribute__((noinline)) std::size_t capture_at(int depth, std::span<std::uint64_t> out) {
  if (depth == 0) return capture_stack(out);
  const std::size_t n = capture_at(depth - 1, out);
  benchmark::DoNotOptimize(n);
  return n;
}

void BM_CaptureStack(benchmark::State& state) {
  std::array<std::uint64_t, 64> frames{};
  const auto depth = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(capture_at(20, std::span(frames.data(), depth)));
  }
}
BENCHMARK(BM_CaptureStack)->Arg(4)->Arg(16)->Arg(32);

void BM_CaptureStackUnwindBacktrace(benchmark::State& state) {
  std::array<std::uint64_t, 64> frames{};
  for (auto _ : state) {
    benchmark::DoNotOptimize(capture_stack_slow(std::span(frames.data(), 16)));
  }
}
BENCHMARK(BM_CaptureStackUnwindBacktrace);

// One launch (with an access to infer) on alternating streams, and an event
// record + wait every 16 launches, fed through the recorder to the engine.
void BM_ModelledLaunch(benchmark::State& state) {
  const bool stacks = state.range(0) != 0;
  recorder rec({.capture_stacks = stacks, .stack_depth = 16});
  engine eng;
  rec.add_sink(eng);
  fake_driver driver;
  driver.kernels[0x1000] = kernel_description{"_Z5emptyPf", {{0, 8}}, true};
  cuda_model model(rec, driver);
  const call_site here{};
  model.stream_created(here, 0xa, 1, 0);
  model.stream_created(here, 0xb, 1, 0);
  model.event_created(here, 0xe, 2);
  model.allocated(here, 0x10000, 4096, memory_kind::device);
  model.allocated(here, 0x20000, 4096, memory_kind::device);
  std::uint64_t buffers[2] = {0x10000, 0x20000};
  void* params[2][1] = {{&buffers[0]}, {&buffers[1]}};
  std::array<std::uint64_t, 16> frames{};
  std::uint64_t i = 0;
  for (auto _ : state) {
    const int k = static_cast<int>(i & 1);
    const std::uintptr_t stream = k ? 0xb : 0xa;
    const call_site at{stacks ? std::span<const std::uint64_t>(
                                    frames.data(), capture_stack(frames))
                              : std::span<const std::uint64_t>{}};
    model.kernel_launched(at, {stream}, 0x1000, kernel_arguments::from_pointers(params[k]));
    if (i % 16 == 15) {
      model.event_recorded(at, 0xe, {stream});
      model.stream_waited_event(at, {k ? std::uintptr_t{0xa} : std::uintptr_t{0xb}}, 0xe);
    }
    ++i;
  }
  if (!eng.diagnostics().empty()) state.SkipWithError("the launch pattern must be race-free");
}
BENCHMARK(BM_ModelledLaunch)->Arg(0)->Arg(1);

}  // namespace
}  // namespace streamsan::injection
BENCHMARK_MAIN();
