// What the program's thread pays per kernel launch inside the Compute
// Sanitizer API source, the default capture (issue #11: "our own work",
// about 0.64 us a launch on an H200): the driver-API callbacks of one
// cuLaunchKernel, entry and exit, through the source's dispatch, the
// launch decoding, the model and the recorder, into an engine inline (no
// stacks, no queue: model_bench.cpp measures those apart). Over the fake
// Sanitizer API and the fake driver of tests/inject, in the default mode's
// steady state: the kernel's first launches on both streams have been
// measured and its module unpatched, so no launch callback comes. Every 16
// launches an event record and wait hand over to the other stream, as in
// launch_bound.cu.
//
// Run it with STREAMSAN_SANITIZER_LIB naming the fake library (meson's
// benchmark() does), for instance under callgrind (one command):
//   STREAMSAN_SANITIZER_LIB=build/tests/inject/libfake_sanitizer_api.so
//     valgrind --tool=callgrind build/bench/injection/injection_source_bench
//     --benchmark_filter=BM_SourceLaunch --benchmark_min_time=0.2
#include <benchmark/benchmark.h>
#include <sanitizer.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "inject/sanitizer_api/sanitizer_source.h"
#include "sanitizer/engine/engine.h"
#include "tests/inject/driver_call_params.h"
#include "tests/inject/fake_cuda_driver.h"
#include "tests/inject/fake_driver.h"
#include "tests/inject/fake_sanitizer_api.h"
#include "tests/inject/fake_sanitizer_calls.h"

namespace streamsan::injection {
namespace {

const auto ctx = reinterpret_cast<CUcontext>(0xc0);
const auto module_a = reinterpret_cast<CUmodule>(0xa000);
const auto add = reinterpret_cast<CUfunction>(0xadd0);
const auto stream_1 = reinterpret_cast<CUstream>(0x5001);
const auto stream_2 = reinterpret_cast<CUstream>(0x5002);
const auto handover = reinterpret_cast<CUevent>(0xe001);
constexpr std::uint64_t buffers = 0x7e0000000000;

using namespace driver_calls;  // tests/inject/driver_call_params.h
using namespace fake_calls;    // tests/inject/fake_sanitizer_calls.h

class source_launches {
 public:
  // busy: the streams never drain (a launch-bound loop on a GPU), so the
  // module patched for the first launches cannot be unpatched (Note
  // [Unpatching waits for idle streams]) and every launch takes the launch
  // callbacks too.
  // one_stream: every launch on one blocking stream, no hand-over: work
  // that cannot overlap (Note [First launches are measured once work can
  // overlap]), so nothing is measured and each launch asks whether its
  // arguments reach host memory.
  source_launches(bool busy, bool one_stream) : busy_(busy), one_stream_(one_stream) {
    rec_.add_sink(eng_);
    fake_sanitizer_reset();
    // add(float* p, const float* q): p[i] += q[i], 8 buffers of 1 KiB.
    driver_.kernels[reinterpret_cast<std::uintptr_t>(add)] =
        kernel_description{"_Z3addPfPKf", {{0, 8}, {8, 8}}, true};
    fake_cuda_define_function(add, module_a, "_Z3addPfPKf");
    for (int b = 0; b < 8; ++b) model_.allocated({}, buffers + b * 1024, 1024, memory_kind::device);
    std::string why;
    source_ = sanitizer_source::create(dispatcher_, model_, measurement_policy::on_demand, why,
                                       graph_node_measurement::off);
    if (!source_) throw std::runtime_error(why);
    source_->enable();
    Sanitizer_ResourceModuleData m{};
    m.context = ctx;
    m.module = module_a;
    fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_RESOURCE, SANITIZER_CBID_RESOURCE_MODULE_LOADED, &m);
    CUstream s = stream_1;
    stream_create_params sc{&s, one_stream ? CU_STREAM_DEFAULT : CU_STREAM_NON_BLOCKING};
    api(SANITIZER_CBID_DRIVER_API_cuStreamCreate, "cuStreamCreate", &sc);
    s = stream_2;
    if (!one_stream) api(SANITIZER_CBID_DRIVER_API_cuStreamCreate, "cuStreamCreate", &sc);
    CUevent e = handover;
    event_create_params ec{&e, CU_EVENT_DISABLE_TIMING};
    api(SANITIZER_CBID_DRIVER_API_cuEventCreate, "cuEventCreate", &ec);
    fake_cuda_set_stream_busy(stream_1, busy_);
    fake_cuda_set_stream_busy(stream_2, busy_);
    // The first launches on each stream are measured (launch callbacks on);
    // the next ones let the module go unpatched.
    for (int i = 0; i < 64; ++i) next(true);
    source_->drain();
  }
  ~source_launches() { source_->drain(); }

  // One launch on the current stream, and the handover every 16 launches.
  void next(bool launch_callbacks = false) {
    const std::uint64_t k = i_ % 8;
    p_ = buffers + k * 1024;
    q_ = buffers + ((k + 1) % 8) * 1024;
    launch_params p{};
    p.f = add;
    p.grid_x = p.block_x = 256;
    p.hStream = stream();
    p.kernelParams = args_;
    deliver_api_call(SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuLaunchKernel,
                     "cuLaunchKernel", &p, ctx, [&] {
                       if (!launch_callbacks && !busy_) return;
                       deliver_launch_callbacks(launch_data(ctx, p.hStream, module_a, add,
                                                            "_Z3addPfPKf", next_launch_++));
                     });
    if (++i_ % 16 == 0 && !one_stream_) {
      event_record_params r{handover, stream()};
      api(SANITIZER_CBID_DRIVER_API_cuEventRecord, "cuEventRecord", &r);
      ++turn_;
      stream_wait_event_params w{stream(), handover, 0};
      api(SANITIZER_CBID_DRIVER_API_cuStreamWaitEvent, "cuStreamWaitEvent", &w);
    }
  }
  const engine& eng() const { return eng_; }
  sanitizer_source_stats stats() const { return source_->stats(); }

 private:
  CUstream stream() const { return turn_ % 2 == 0 ? stream_1 : stream_2; }
  void api(Sanitizer_CallbackId cbid, const char* name, const void* params) {
    deliver_api_call(SANITIZER_CB_DOMAIN_DRIVER_API, cbid, name, params, ctx);
  }

  bool busy_;
  bool one_stream_;
  recorder rec_{{.capture_stacks = false, .stack_depth = 0}};
  engine eng_;
  fake_driver driver_;
  cuda_model model_{rec_, driver_};
  no_call_sites sites_;
  api_dispatcher dispatcher_{model_, sites_};
  std::unique_ptr<sanitizer_source> source_;
  std::uint64_t p_ = 0, q_ = 0;
  void* args_[2] = {&p_, &q_};
  std::uint64_t i_ = 0, turn_ = 0;
  std::uintptr_t next_launch_ = 0x100;
};

void source_launch(benchmark::State& state, bool busy, bool one_stream = false) {
  source_launches launches(busy, one_stream);
  const int queries_before = fake_cuda_stream_queries();
  for (auto _ : state) launches.next();
  const auto stats = launches.stats();
  state.counters["measured"] = static_cast<double>(stats.measured);
  state.counters["unpatched"] = static_cast<double>(stats.modules_unpatched);
  state.counters["stream_queries_per_launch"] =
      static_cast<double>(fake_cuda_stream_queries() - queries_before) /
      static_cast<double>(state.iterations());
  if (!launches.eng().diagnostics().empty()) {
    state.SkipWithError("the launch pattern must be race-free");
  }
}

void BM_SourceLaunch(benchmark::State& state) { source_launch(state, false); }
BENCHMARK(BM_SourceLaunch);

void BM_SourceLaunchBusyStreams(benchmark::State& state) { source_launch(state, true); }
BENCHMARK(BM_SourceLaunchBusyStreams);

void BM_SourceLaunchOneStream(benchmark::State& state) { source_launch(state, false, true); }
BENCHMARK(BM_SourceLaunchOneStream);

// Note [Our launch path with cold caches]
// On the H200 our code took about 0.8 us of each launch of the launch loop
// on the program thread (critical_share.py, 14 to 16% of a ~4.8 us
// launch), against about 0.2 us here. Between two of our callbacks the
// driver runs its own launch path, which evicts what ours keeps warm in a
// loop that does nothing else: so there, much of our cost is likely the
// cache lines we touch rather than the instructions we run (on the host,
// 4 MiB written between launches makes a launch two to three times
// dearer). This variant writes
// state.range(0) KiB of other memory between launches, outside the timed
// region, so that a change which touches fewer lines shows here as it
// would on the GPU machine (manual time: only next() is timed).
void BM_SourceLaunchColdCaches(benchmark::State& state) {
  source_launches launches(false, false);
  std::vector<std::uint64_t> other(static_cast<std::size_t>(state.range(0)) * 1024 / 8 + 1);
  std::uint64_t touch = 0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < other.size(); i += 8) other[i] = ++touch;  // one word a line
    benchmark::ClobberMemory();
    const auto start = std::chrono::steady_clock::now();
    launches.next();
    const auto end = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(end - start).count());
  }
  benchmark::DoNotOptimize(other.data());
}
BENCHMARK(BM_SourceLaunchColdCaches)->Arg(0)->Arg(64)->Arg(512)->Arg(4096)->UseManualTime();

}  // namespace
}  // namespace streamsan::injection

BENCHMARK_MAIN();
