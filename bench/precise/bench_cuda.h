// What the GPU programs of bench/precise share: a check that names the
// failed call's place and error, the loop of the two programs that hand
// work between two streams, and the triad kernel of the bandwidth-bound
// ones.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                              \
  do {                                                                           \
    cudaError_t e_ = (call);                                                     \
    if (e_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

// The loop of launch_loop and busy_streams: two non-blocking streams, `batch`
// launches on one, then an event record and a wait hand over to the other
// (so every batch is ordered after the one before), `total` launches, one
// synchronize at the end. `launch(i, stream, k)` issues launch i on stream
// k of the two; `after(i)` runs once it is issued. Returns the milliseconds
// from the first launch to the end of the synchronize.
template <class Launch, class After>
double handoff_loop_ms(int total, int batch, Launch launch, After after) {
  cudaStream_t s[2];
  cudaEvent_t handoff[2];
  for (int k = 0; k < 2; ++k) {
    CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&handoff[k], cudaEventDisableTiming));
  }
  CHECK(cudaDeviceSynchronize());
  const auto start = std::chrono::steady_clock::now();
  int current = 0;
  for (int i = 0; i < total; ++i) {
    launch(i, s[current], current);
    if ((i + 1) % batch == 0) {
      CHECK(cudaEventRecord(handoff[current], s[current]));
      CHECK(cudaStreamWaitEvent(s[1 - current], handoff[current], 0));
      current = 1 - current;
    }
    after(i);
  }
  CHECK(cudaDeviceSynchronize());
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// STREAM's triad, c = a + s * b, in a grid-stride loop.
static __global__ void triad(float* c, const float* a, const float* b, float s, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    c[i] = a[i] + s * b[i];
  }
}
