// Per-call cost of the runtime's hot calls on the sim backend: a kernel
// launch, an event record, a stream wait on an event, with instrumentation
// off, logging into a sink that drops records, and the live sanitizer
// (engine attached), with and without call stacks. The backend_* rows are
// the sim backend called directly: the floor the runtime adds to.
//
// Run: build/bench/runtime/runtime_call_cost_bench
#include <benchmark/benchmark.h>

#include "runtime/api.h"
#include "sanitizer/log/record.h"

namespace streamsan::rt {
namespace {

enum class mode : int { off = 0, null_sink = 1, sanitize = 2, sanitize_stacks = 3 };

class null_sink final : public record_sink {
 public:
  void on_record(const record&) override {}
};

// Starts a sim session for `m`; eager, so that pending work stays bounded
// and every variant pays the same execution cost.
void start(mode m, null_sink& sink) {
  runtime_options options;
  options.backend = backend_kind::sim;
  options.sim.policy = sim_policy::eager;
  options.capture_stacks = m == mode::sanitize_stacks;
  options.sanitize = m == mode::sanitize || m == mode::sanitize_stacks;
  options.print_diagnostics = false;
  initialize(options);
  if (m == mode::null_sink) add_log_sink(sink);
}

const char* label(mode m) {
  switch (m) {
    case mode::off: return "instrumentation off";
    case mode::null_sink: return "records built, dropped";
    case mode::sanitize: return "live sanitizer";
    case mode::sanitize_stacks: return "live sanitizer + stacks";
  }
  return "";
}

// Runs `body` in a fresh session of the mode state.range(0) names.
template <class Body>
void measured(benchmark::State& state, Body body) {
  const auto m = static_cast<mode>(state.range(0));
  null_sink sink;
  start(m, sink);
  body(state);
  remove_log_sink(sink);
  shutdown();
  state.SetLabel(label(m));
}

void BM_launch(benchmark::State& state) {
  measured(state, [](benchmark::State& st) {
    stream s;
    auto a = allocate_device(256);
    for (auto _ : st) launch(s, kernels::spin{}, writes(a));
    s.synchronize();
  });
}

void BM_event_record(benchmark::State& state) {
  measured(state, [](benchmark::State& st) {
    stream s;
    event e;
    for (auto _ : st) e.record(s);
    s.synchronize();
  });
}

void BM_wait_event(benchmark::State& state) {
  measured(state, [](benchmark::State& st) {
    stream producer;
    stream consumer;
    event e;
    e.record(producer);
    for (auto _ : st) consumer.wait_event(e);
    consumer.synchronize();
  });
}

// The sim backend alone, without the runtime around it.
void BM_backend_launch(benchmark::State& state) {
  sim_options options;
  options.policy = sim_policy::eager;
  auto sim = make_sim_backend(options);
  const device_stream s{0, sim->create_stream(0, true, 0)};
  for (auto _ : state) sim->launch_kernel(s, spin_args{0});
  sim->synchronize_stream(s);
}

void BM_backend_event_record(benchmark::State& state) {
  sim_options options;
  options.policy = sim_policy::eager;
  auto sim = make_sim_backend(options);
  const device_stream s{0, sim->create_stream(0, true, 0)};
  const auto e = sim->create_event(0, event_flag_none);
  for (auto _ : state) sim->record_event(e, s);
  sim->synchronize_stream(s);
}

void modes(benchmark::internal::Benchmark* b) {
  for (int m = 0; m <= 3; ++m) b->Arg(m);
}

BENCHMARK(BM_backend_launch);
BENCHMARK(BM_launch)->Apply(modes);
BENCHMARK(BM_backend_event_record);
BENCHMARK(BM_event_record)->Apply(modes);
BENCHMARK(BM_wait_event)->Apply(modes);

}  // namespace
}  // namespace streamsan::rt

BENCHMARK_MAIN();
