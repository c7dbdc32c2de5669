// Launch-bound workload for the overhead table (docs/injection.md): empty
// kernels alternating over two streams, with an event record + wait every
// 16 launches. Prints the time of the launch loop (host side, including the
// final synchronize) per launch.
#include "bench_check.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

// Takes a buffer so that each launch has an access to infer and check.
__global__ void empty(float* buffer) {
  if (buffer == nullptr) __trap();
}

int main(int argc, char** argv) {
  const long launches = argc > 1 ? std::atol(argv[1]) : 200000;
  cudaStream_t s[2];
  float* buffer[2];
  for (int i = 0; i < 2; ++i) {
    CHECK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    CHECK(cudaMalloc(&buffer[i], 4096));
  }
  cudaEvent_t e;
  CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  for (int i = 0; i < 1000; ++i) empty<<<1, 32, 0, s[i & 1]>>>(buffer[i & 1]);  // warm up
  CHECK(cudaDeviceSynchronize());

  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < launches; ++i) {
    const int k = static_cast<int>(i & 1);
    empty<<<1, 32, 0, s[k]>>>(buffer[k]);
    if (i % 16 == 15) {
      CHECK(cudaEventRecord(e, s[k]));
      CHECK(cudaStreamWaitEvent(s[k ^ 1], e, 0));
    }
  }
  CHECK(cudaDeviceSynchronize());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("launch_bound launches=%ld elapsed_ms=%.3f per_launch_us=%.3f\n", launches, ms,
              1000.0 * ms / static_cast<double>(launches));
  for (int i = 0; i < 2; ++i) {
    CHECK(cudaFree(buffer[i]));
    CHECK(cudaStreamDestroy(s[i]));
  }
  return 0;
}
