// A bandwidth-bound kernel (STREAM triad over 3 x 64 MiB), to measure what
// patched memory instructions cost where every instruction is a memory
// access. Prints the time of the loop.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "bench/precise/bench_cuda.h"

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 200;
  constexpr int n = 16 << 20;
  float *a, *b, *c;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  CHECK(cudaMalloc(&c, n * sizeof(float)));
  CHECK(cudaMemset(a, 0, n * sizeof(float)));
  CHECK(cudaMemset(b, 0, n * sizeof(float)));
  triad<<<1056, 256>>>(c, a, b, 2.0f, n);
  CHECK(cudaDeviceSynchronize());
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < iterations; ++k) triad<<<1056, 256>>>(c, a, b, 2.0f, n);
  CHECK(cudaDeviceSynchronize());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("triad iterations=%d elapsed_ms=%.3f GB/s=%.1f\n", iterations, ms,
              3.0 * n * sizeof(float) * iterations / ms / 1e6);
  return 0;
}
