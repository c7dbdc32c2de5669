// Does streamsan change how the program runs? (issue #12, item 5.) Two
// kernels on two non-blocking streams, with nothing ordering them, must
// still run at the same time under `streamsan run`: the library may add no
// synchronization. Each kernel stamps the GPU's global timer when it starts
// and ends (event timings would also count the time a kernel waits in its
// queue); the program prints how much of the shorter one ran alongside the
// other,
//   overlap: first_ms=X second_ms=Y together_ms=Z overlap=F
// with F = Z / min(X, Y): 1 when the two ran fully side by side, 0 when one
// ran after the other. check_overlap.sh runs it natively and under
// streamsan and compares. Each kernel is one block, so both fit on the GPU
// at once. Both streams launch once before the measured launches, so that
// these are not the first launch on their stream either (the default mode
// measures those: Note [Which launches are measured]).
#include <algorithm>
#include <cstdio>

#include "example_common.h"

namespace {

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// stamps[0] = start, stamps[1] = end, in GPU nanoseconds.
__global__ void busy(unsigned long long* stamps, long long cycles) {
  const unsigned long long start = global_ns();
  spin(cycles);
  if (threadIdx.x == 0) {
    stamps[0] = start;
    stamps[1] = global_ns();
  }
}

}  // namespace

int main() {
  // About 100 ms at 1.5-2 GHz: long enough that launch latency is noise.
  const long long cycles = 200'000'000;
  unsigned long long* stamps;  // [first start, first end, second start, second end]
  CHECK(cudaMalloc(&stamps, 4 * sizeof(unsigned long long)));
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  busy<<<1, 32, 0, s1>>>(stamps, 1000);
  busy<<<1, 32, 0, s2>>>(stamps + 2, 1000);
  CHECK(cudaDeviceSynchronize());

  busy<<<1, 32, 0, s1>>>(stamps, cycles);
  busy<<<1, 32, 0, s2>>>(stamps + 2, cycles);
  CHECK(cudaDeviceSynchronize());
  unsigned long long t[4];
  CHECK(cudaMemcpy(t, stamps, sizeof t, cudaMemcpyDeviceToHost));

  const double first = (t[1] - t[0]) / 1e6, second = (t[3] - t[2]) / 1e6;
  const double together =
      std::max(0.0, (std::min(t[1], t[3]) - static_cast<double>(std::max(t[0], t[2]))) / 1e6);
  std::printf("overlap: first_ms=%.1f second_ms=%.1f together_ms=%.1f overlap=%.2f\n", first,
              second, together, together / std::min(first, second));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(stamps));
  return 0;
}
