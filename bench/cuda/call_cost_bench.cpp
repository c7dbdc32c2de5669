// Per-call host cost of a kernel launch, an event record and a stream wait on
// a real GPU, at four levels:
//   raw      cudart directly (cudaLaunchKernel of the library's fill kernel,
//            cudaEventRecord, cudaStreamWaitEvent);
//   backend  the cuda backend (runtime/cuda) called directly: adds the
//            device scope and the error check;
//   api      the runtime API (launch, event::record, stream::wait_event) with
//            sanitizing off: adds registry look-ups and the logging() branch;
//   sanitize the runtime API with sanitizing on (a live engine), without and
//            with call stacks.
//
// Note [Keeping the launch queue short]
// Each iteration enqueues work; unbounded, the device's queue fills and the
// host then waits for the GPU, which would measure the kernel, not the call.
// Every `drain_every` iterations the stream is synchronized with the timer
// paused.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstdio>
#include <memory>

#include "runtime/api.h"
#include "runtime/cuda/kernel_library.h"

namespace streamsan::rt {
namespace {

constexpr std::int64_t drain_every = 256;
constexpr std::uint64_t floats = 256;

// Runs `op` once per iteration; see Note [Keeping the launch queue short].
template <class Op, class Drain>
void timed_loop(benchmark::State& state, Op&& op, Drain&& drain) {
  std::int64_t i = 0;
  for (auto _ : state) {
    op();
    if (++i % drain_every == 0) {
      state.PauseTiming();
      drain();
      state.ResumeTiming();
    }
  }
  drain();
}

// A runtime session on the cuda backend for one benchmark run; the
// benchmark's argument picks the level: 0 sanitizing off, 1 on without
// stacks, 2 on with stacks.
class api_session {
 public:
  explicit api_session(benchmark::State& state) {
    const auto level = state.range(0);
    runtime_options options;
    options.backend = backend_kind::cuda;
    options.sanitize = level != 0;
    options.capture_stacks = level == 2;
    options.print_diagnostics = false;
    initialize(options);
    state.SetLabel(level == 0   ? "api, sanitizing off"
                   : level == 1 ? "api, sanitizing on, no stacks"
                                : "api, sanitizing on, with stacks");
  }
  ~api_session() { shutdown(); }
  api_session(const api_session&) = delete;
  api_session& operator=(const api_session&) = delete;
};

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", call, cudaGetErrorString(status));
    std::abort();
  }
}

// Raw cudart objects for the raw benchmarks.
struct raw_objects {
  cudaStream_t producer = nullptr;
  cudaStream_t consumer = nullptr;
  cudaEvent_t event = nullptr;
  float* x = nullptr;

  raw_objects() {
    check(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    void* memory = nullptr;
    check(cudaMalloc(&memory, floats * sizeof(float)), "cudaMalloc");
    x = static_cast<float*>(memory);
  }
  ~raw_objects() {
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    check(cudaFree(x), "cudaFree");
    check(cudaEventDestroy(event), "cudaEventDestroy");
    check(cudaStreamDestroy(consumer), "cudaStreamDestroy");
    check(cudaStreamDestroy(producer), "cudaStreamDestroy");
  }
  raw_objects(const raw_objects&) = delete;
  raw_objects& operator=(const raw_objects&) = delete;

  void sync(cudaStream_t s) const { check(cudaStreamSynchronize(s), "cudaStreamSynchronize"); }
};

// ---- kernel launch ----

void BM_LaunchRaw(benchmark::State& state) {
  const raw_objects raw;
  timed_loop(
      state,
      [&] {
        check(cuda::launch_library_kernel(raw.producer, fill_args{raw.x, floats, 1.0f}),
              "cudaLaunchKernel");
      },
      [&] { raw.sync(raw.producer); });
  state.SetLabel("raw cudart");
}

void BM_LaunchBackend(benchmark::State& state) {
  const auto b = make_cuda_backend();
  const device_stream s{0, b->create_stream(0, true, 0)};
  auto* x = static_cast<float*>(b->allocate(memory_kind::device, 0, floats * sizeof(float), s));
  timed_loop(
      state, [&] { b->launch_kernel(s, fill_args{x, floats, 1.0f}); },
      [&] { b->synchronize_stream(s); });
  b->deallocate(memory_kind::device, 0, x, s);
  b->destroy_stream(s);
  state.SetLabel("cuda backend");
}

void BM_LaunchApi(benchmark::State& state) {
  const api_session session(state);
  const stream s;
  const buffer x = allocate_device(floats * sizeof(float));
  timed_loop(state, [&] { launch(s, kernels::fill{x, 1.0f}); }, [&] { s.synchronize(); });
}

// ---- event record ----

void BM_RecordRaw(benchmark::State& state) {
  const raw_objects raw;
  timed_loop(
      state, [&] { check(cudaEventRecord(raw.event, raw.producer), "cudaEventRecord"); },
      [&] { raw.sync(raw.producer); });
  state.SetLabel("raw cudart");
}

void BM_RecordApi(benchmark::State& state) {
  const api_session session(state);
  const stream s;
  const event e;
  timed_loop(state, [&] { e.record(s); }, [&] { s.synchronize(); });
}

// ---- stream wait ----

void BM_WaitRaw(benchmark::State& state) {
  const raw_objects raw;
  check(cudaEventRecord(raw.event, raw.producer), "cudaEventRecord");
  timed_loop(
      state,
      [&] { check(cudaStreamWaitEvent(raw.consumer, raw.event, 0), "cudaStreamWaitEvent"); },
      [&] { raw.sync(raw.consumer); });
  state.SetLabel("raw cudart");
}

void BM_WaitApi(benchmark::State& state) {
  const api_session session(state);
  const stream producer;
  const stream consumer;
  const event e;
  e.record(producer);
  timed_loop(state, [&] { consumer.wait_event(e); }, [&] { consumer.synchronize(); });
}

// Arg: 0 sanitizing off, 1 on without stacks, 2 on with stacks.
BENCHMARK(BM_LaunchRaw);
BENCHMARK(BM_LaunchBackend);
BENCHMARK(BM_LaunchApi)->DenseRange(0, 2);
BENCHMARK(BM_RecordRaw);
BENCHMARK(BM_RecordApi)->DenseRange(0, 2);
BENCHMARK(BM_WaitRaw);
BENCHMARK(BM_WaitApi)->DenseRange(0, 2);

}  // namespace
}  // namespace streamsan::rt

int main(int argc, char** argv) {
  if (!streamsan::rt::cuda_device_present()) {
    std::puts("no CUDA device visible: nothing to measure");
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
