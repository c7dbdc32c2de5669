// Host-side cost of the injection library's work per CUDA call, without
// CUPTI or a GPU: stack capture, and a modelled kernel launch (access
// inference + recorder + live engine), in the launch pattern of
// launch_bound.cu. The GPU-side table is produced by overhead.sh.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <vector>

#include "inject/model/cuda_model.h"
#include "inject/precise/footprint_resolver.h"
#include "inject/stack/fast_unwinder.h"
#include "sanitizer/engine/engine.h"
#include "sanitizer/log/queued_sink.h"
#include "tests/inject/fake_driver.h"

namespace streamsan::injection {
namespace {

__attribute__((noinline)) std::size_t capture_at(int depth, std::span<std::uint64_t> out,
                                                std::uint64_t path_key = 0) {
  if (depth == 0) return capture_stack(out, path_key);
  const std::size_t n = capture_at(depth - 1, out, path_key);
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

// The same walk under a path key, as the call sites capture: the path cache
// resumes it and, from the second resumed walk on, it is read back (Note [A
// repeated walk is read back]).
void BM_CaptureStackOnAKnownPath(benchmark::State& state) {
  std::array<std::uint64_t, 64> frames{};
  const auto depth = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(capture_at(20, std::span(frames.data(), depth), 0x5eed));
  }
}
BENCHMARK(BM_CaptureStackOnAKnownPath)->Arg(4)->Arg(16)->Arg(32);

void BM_CaptureStackUnwindBacktrace(benchmark::State& state) {
  std::array<std::uint64_t, 64> frames{};
  for (auto _ : state) {
    benchmark::DoNotOptimize(capture_stack_slow(std::span(frames.data(), 16)));
  }
}
BENCHMARK(BM_CaptureStackUnwindBacktrace);

// The launch pattern of launch_bound.cu: one launch (with an access to
// infer) on alternating streams, and an event record + wait every 16
// launches, through a recorder to `sink`.
class launch_pattern {
 public:
  launch_pattern(recorder& rec, bool stacks) : stacks_(stacks), model_(rec, driver_) {
    driver_.kernels[0x1000] = kernel_description{"_Z5emptyPf", {{0, 8}}, true};
    const call_site here{};
    model_.stream_created(here, 0xa, 1, 0);
    model_.stream_created(here, 0xb, 1, 0);
    model_.event_created(here, 0xe, 2);
    model_.allocated(here, 0x10000, 4096, memory_kind::device);
    model_.allocated(here, 0x20000, 4096, memory_kind::device);
  }
  void next() {
    const int k = static_cast<int>(i_ & 1);
    const std::uintptr_t stream = k ? 0xb : 0xa;
    const call_site at{stacks_ ? std::span<const std::uint64_t>(frames_.data(),
                                                                capture_stack(frames_))
                               : std::span<const std::uint64_t>{}};
    model_.kernel_launched(at, {stream}, 0x1000, kernel_arguments::from_pointers(params_[k]));
    if (i_ % 16 == 15) {
      model_.event_recorded(at, 0xe, {stream});
      model_.stream_waited_event(at, {k ? std::uintptr_t{0xa} : std::uintptr_t{0xb}}, 0xe);
    }
    ++i_;
  }

 private:
  bool stacks_;
  fake_driver driver_;
  cuda_model model_;
  std::uint64_t buffers_[2] = {0x10000, 0x20000};
  void* params_[2][1] = {{&buffers_[0]}, {&buffers_[1]}};
  std::array<std::uint64_t, 16> frames_{};
  std::uint64_t i_ = 0;
};

void BM_ModelledLaunch(benchmark::State& state) {
  const bool stacks = state.range(0) != 0;
  recorder rec({.capture_stacks = stacks, .stack_depth = 16});
  engine eng;
  rec.add_sink(eng);
  launch_pattern launches(rec, stacks);
  for (auto _ : state) launches.next();
  if (!eng.diagnostics().empty()) state.SkipWithError("the launch pattern must be race-free");
}
BENCHMARK(BM_ModelledLaunch)->Arg(0)->Arg(1);

// A launch whose one parameter is a struct of range(0) bytes, as
// framework kernels take (a functor with its tensors' sizes and strides, a
// foreach kernel's list of tensor addresses: 4 KiB and more). Its type is
// not in the name, so every word is looked at: range(1) of them are
// addresses, each in its own of 64 allocations of 2 MiB (a caching
// allocator's segments), the rest small integers. One stream: no
// hand-over, no race.
void BM_ModelledLaunchStructParam(benchmark::State& state) {
  const auto bytes = static_cast<std::uint32_t>(state.range(0));
  const auto addresses = static_cast<std::size_t>(state.range(1));
  recorder rec({.capture_stacks = false});
  engine eng;
  rec.add_sink(eng);
  fake_driver driver;
  driver.kernels[0x1000] = kernel_description{"_Z6kernel6Params", {{0, bytes}}, true};
  cuda_model model(rec, driver);
  const call_site here{};
  model.stream_created(here, 0xa, 1, 0);
  constexpr std::uint64_t segment = 2u << 20;
  constexpr std::uint64_t first = 0x7f0000000000;
  for (std::uint64_t i = 0; i < 64; ++i) {
    model.allocated(here, first + i * segment, segment, memory_kind::device);
  }
  std::vector<std::uint64_t> words(bytes / 8);
  const std::size_t every = std::max<std::size_t>(1, words.size() / addresses);
  for (std::size_t w = 0; w < words.size(); ++w) {
    const std::size_t k = w / every;
    words[w] = w % every == 0 && k < addresses ? first + k % 64 * segment + 256 * k : w * 4 + 1;
  }
  void* params[1] = {words.data()};
  for (auto _ : state) {
    model.kernel_launched(here, {0xa}, 0x1000, kernel_arguments::from_pointers(params));
  }
  if (!eng.diagnostics().empty()) state.SkipWithError("one stream cannot race");
}
BENCHMARK(BM_ModelledLaunchStructParam)
    ->ArgsProduct({{64, 512, 4096}, {2, 8}})
    ->Args({4096, 64})
    ->Args({4096, 256});

// What the program's thread pays per launch when launches come at a launch-
// bound loop's pace: between launches, range(1) ns of the program's own work
// (not counted) that writes range(2) KiB of a large buffer, as the driver's
// work evicts streamsan's data. The engine inline (range(0) = 0) or on its
// own thread behind the session's queue (1; Note [Where the engine runs]).
// No stacks.
void BM_ModelledLaunchProgramThread(benchmark::State& state) {
  const bool queued = state.range(0) != 0;
  const auto gap = std::chrono::nanoseconds(state.range(1));
  const auto touch_lines = static_cast<std::size_t>(state.range(2)) * 16;
  recorder rec({.capture_stacks = false});
  engine eng;
  std::unique_ptr<queued_sink> queue;
  if (queued) {
    queue = std::make_unique<queued_sink>();
    queue->add_downstream(eng);
    queue->start();
    rec.add_sink(*queue);
  } else {
    rec.add_sink(eng);
  }
  launch_pattern launches(rec, false);
  std::vector<std::uint8_t> program_memory(64u << 20);
  std::size_t at = 0;
  using clock_type = std::chrono::steady_clock;
  for (auto _ : state) {
    const auto work_until = clock_type::now() + gap;
    for (std::size_t line = 0; line < touch_lines; ++line) {
      program_memory[at] += 1;
      at = (at + 64) % program_memory.size();
    }
    while (clock_type::now() < work_until) {
    }
    const auto start = clock_type::now();
    launches.next();
    state.SetIterationTime(std::chrono::duration<double>(clock_type::now() - start).count());
  }
  if (queue) {
    queue->close();
    state.counters["producer_waits"] = static_cast<double>(queue->statistics().producer_waits);
    state.counters["wakeups"] = static_cast<double>(queue->statistics().wakeups);
  }
  if (!eng.diagnostics().empty()) state.SkipWithError("the launch pattern must be race-free");
}
BENCHMARK(BM_ModelledLaunchProgramThread)
    ->ArgsProduct({{0, 1}, {0}, {0}})
    ->ArgsProduct({{0, 1}, {2000}, {0, 16, 64}})
    ->UseManualTime();

// What a PyTorch operator costs the model with the native operator hook
// (issue #9 point 8): the caching allocator hands out the output's block,
// the operator begins with two input spans, launches one kernel, ends
// naming its output, and the previous output's block goes back to the pool;
// through the footprint resolver into the live engine, no stack (range(0) =
// 0) or a 16-frame one (1), as the native hook's calls would. The kernel
// takes its three pointers as parameters of their own (range(1) = 0), or
// in one 512-byte struct beside sizes, strides and a float (1), as
// PyTorch's elementwise kernels do (Note [Most words are not addresses]).
// range(2) = 0: the output is named at op_ended() and the launch held for
// it (the Python dispatch mode, a hook without the allocator tracker); 1:
// the output is the block handed out inside the operator (Note [An
// operator's outputs are its blocks]), as the native hook with the tracker.
class operator_pattern {
 public:
  operator_pattern(recorder& rec, bool stacks, bool wide, bool blocks)
      : stacks_(stacks), wide_(wide), blocks_(blocks), model_(rec, driver_) {
    resolver_.add_downstream(eng_);
    rec.add_sink(resolver_);
    model_.set_footprint_resolver(&resolver_);
    driver_.kernels[0x1000] =
        wide ? kernel_description{"_Z4loop6params", {{0, sizeof wide_words_}}, true}
             : kernel_description{"_Z3addPfPKfS1_", {{0, 8}, {8, 8}, {16, 8}}, true};
    for (std::size_t i = 3; i < wide_words_.size(); ++i) {
      wide_words_[i] = i % 4 == 0 ? 0x3f800000 : 1u << (i % 12);  // 1.0f, sizes, strides
    }
    const call_site here{};
    model_.stream_created(here, 0xa, 1, 0);
    model_.allocated(here, segment, 2 << 20, memory_kind::device);
    model_.block_allocated(here, segment, 4096, 0, {0xa});
    model_.block_allocated(here, segment + 4096, 4096, 0, {0xa});
  }
  void next() {
    const std::uint64_t out = segment + 8192 + (i_ % 2) * 4096;
    const call_site at{stacks_ ? std::span<const std::uint64_t>(frames_.data(),
                                                                capture_stack(frames_))
                               : std::span<const std::uint64_t>{}};
    const annotated_range inputs[] = {{segment, 4096, access_mode::read},
                                      {segment + 4096, 4096, access_mode::read}};
    if (blocks_) {
      model_.op_began(inputs, op_outputs::blocks);
      model_.block_allocated(at, out, 4096, 0, {0xa});
    } else {
      model_.block_allocated(at, out, 4096, 0, {0xa});
      model_.op_began(inputs, op_outputs::named_at_end);
    }
    std::uint64_t words[3] = {out, segment, segment + 4096};
    void* params[3] = {&words[0], &words[1], &words[2]};
    if (wide_) {
      std::copy(std::begin(words), std::end(words), wide_words_.begin());
      params[0] = wide_words_.data();
    }
    model_.kernel_launched(at, {0xa}, 0x1000, kernel_arguments::from_pointers(params));
    const annotated_range outputs[] = {{out, 4096, access_mode::write}};
    model_.op_ended(blocks_ ? std::span<const annotated_range>{} : outputs);
    if (i_ > 0) model_.block_freed(call_site{}, segment + 8192 + ((i_ + 1) % 2) * 4096);
    ++i_;
  }
  const engine& eng() const { return eng_; }

 private:
  static constexpr std::uint64_t segment = 0x700000000000;
  bool stacks_;
  bool wide_;
  bool blocks_;
  std::array<std::uint64_t, 64> wide_words_{};
  fake_driver driver_;
  engine eng_;
  precise::footprint_resolver resolver_;
  cuda_model model_;
  std::array<std::uint64_t, 16> frames_{};
  std::uint64_t i_ = 0;
};

void BM_ModelledOperator(benchmark::State& state) {
  const bool stacks = state.range(0) != 0;
  recorder rec({.capture_stacks = stacks, .stack_depth = 16});
  operator_pattern ops(rec, stacks, state.range(1) != 0, state.range(2) != 0);
  for (auto _ : state) ops.next();
  state.counters["diagnostics"] = static_cast<double>(ops.eng().diagnostics().size());
}
BENCHMARK(BM_ModelledOperator)->ArgsProduct({{0, 1}, {0, 1}, {0, 1}});

}  // namespace
}  // namespace streamsan::injection
BENCHMARK_MAIN();
