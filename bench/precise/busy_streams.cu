// Bandwidth-bound kernels on two non-blocking streams that never go idle
// until the end: each stream runs a triad over its own 3 x 16 MiB, 16
// launches at a time, handing over to the other through an event record
// and a wait, as launch_loop does, and the host synchronizes only after
// the loop. Under the default mode the first launch on each stream is
// measured, so the kernel's module is patched, and an unpatch needs every
// stream it ran on idle at once (Note [A module changes only while none of
// its kernels runs]): what a program that keeps its streams busy pays if
// the module then stays patched (Note [Waiting for a module's streams to
// drain]). Prints the time of the loop.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "bench/precise/bench_cuda.h"

int main(int argc, char** argv) {
  const int total = argc > 1 ? std::atoi(argv[1]) : 2000;
  constexpr int n = 4 << 20, batch = 16;
  float* buf[2][3];
  for (auto& own : buf) {
    for (auto& b : own) {
      CHECK(cudaMalloc(&b, n * sizeof(float)));
      CHECK(cudaMemset(b, 0, n * sizeof(float)));
    }
  }
  const double ms = handoff_loop_ms(
      total, batch,
      [&](int, cudaStream_t stream, int k) {
        float** b = buf[k];
        triad<<<1056, 256, 0, stream>>>(b[2], b[0], b[1], 2.0f, n);
      },
      [](int) {});
  std::printf("busy_streams launches=%d elapsed_ms=%.3f us_per_launch=%.3f\n", total, ms,
              1000.0 * ms / total);
  return 0;
}
