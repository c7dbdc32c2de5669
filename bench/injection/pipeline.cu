// Compute-bound multi-stream pipeline for the overhead table: chunks flow
// through copy-in, a compute-heavy kernel and copy-out on four streams,
// double-buffered, with an event handing each chunk's result to a
// reduction stream. Prints the time of the whole pipeline.
#include "bench_check.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void compute(const float* in, float* out, int n, int iterations) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float x = in[i];
    for (int k = 0; k < iterations; ++k) x = x * 0.999f + 0.001f;
    out[i] = x;
  }
}

__global__ void accumulate(const float* chunk, float* total, int n) {
  float s = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    s += chunk[i];
  }
  atomicAdd(total, s);
}

int main(int argc, char** argv) {
  const int chunks = argc > 1 ? std::atoi(argv[1]) : 192;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 250000;
  constexpr int streams = 4;
  constexpr int n = 1 << 20;
  const std::size_t bytes = n * sizeof(float);

  float* host_in;
  float* host_out;
  CHECK(cudaMallocHost(&host_in, bytes * streams));
  CHECK(cudaMallocHost(&host_out, bytes * streams));
  for (int i = 0; i < n * streams; ++i) host_in[i] = 1.0f;
  std::vector<cudaStream_t> s(streams);
  std::vector<cudaEvent_t> done(streams);
  std::vector<float*> in(streams), out(streams);
  cudaStream_t reduce;
  CHECK(cudaStreamCreateWithFlags(&reduce, cudaStreamNonBlocking));
  float* total;
  CHECK(cudaMalloc(&total, sizeof(float)));
  CHECK(cudaMemset(total, 0, sizeof(float)));
  for (int k = 0; k < streams; ++k) {
    CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&done[k], cudaEventDisableTiming));
    CHECK(cudaMalloc(&in[k], bytes));
    CHECK(cudaMalloc(&out[k], bytes));
  }
  CHECK(cudaDeviceSynchronize());

  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < chunks; ++c) {
    const int k = c % streams;
    CHECK(cudaMemcpyAsync(in[k], host_in + static_cast<std::size_t>(k) * n, bytes, cudaMemcpyHostToDevice,
                          s[k]));
    compute<<<264, 256, 0, s[k]>>>(in[k], out[k], n, iterations);
    CHECK(cudaEventRecord(done[k], s[k]));
    CHECK(cudaStreamWaitEvent(reduce, done[k], 0));
    accumulate<<<132, 256, 0, reduce>>>(out[k], total, n);
    // The next chunk on s[k] overwrites out[k]: wait for the reduction.
    cudaEvent_t reduced;
    CHECK(cudaEventCreateWithFlags(&reduced, cudaEventDisableTiming));
    CHECK(cudaEventRecord(reduced, reduce));
    CHECK(cudaStreamWaitEvent(s[k], reduced, 0));
    CHECK(cudaEventDestroy(reduced));
    CHECK(cudaMemcpyAsync(host_out + static_cast<std::size_t>(k) * n, out[k], bytes, cudaMemcpyDeviceToHost,
                          s[k]));
  }
  CHECK(cudaDeviceSynchronize());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  float result = 0;
  CHECK(cudaMemcpy(&result, total, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("pipeline chunks=%d iterations=%d elapsed_ms=%.3f total=%.3g\n", chunks,
              iterations, ms, static_cast<double>(result));
  for (int k = 0; k < streams; ++k) {
    CHECK(cudaFree(in[k]));
    CHECK(cudaFree(out[k]));
  }
  CHECK(cudaFree(total));
  CHECK(cudaFreeHost(host_in));
  CHECK(cudaFreeHost(host_out));
  return 0;
}
