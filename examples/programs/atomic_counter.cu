// Two streams count into one counter (issue #8). Atomics do not race with
// each other, so the fixed version, atomicAdd on both streams, gets no
// report. In the racy version the second stream resets the counter with a
// plain store while the first still adds to it: an atomic and a plain
// access race.
#include "example_common.h"

__global__ void count(unsigned* counter, long long cycles) {
  spin(cycles);
  atomicAdd(counter, 1u);
}

__global__ void reset(unsigned* counter) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *counter = 0;
}

int main() {
  unsigned* counter;
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&counter, sizeof(unsigned)));
  CHECK(cudaMemset(counter, 0, sizeof(unsigned)));
  CHECK(cudaDeviceSynchronize());
  count<<<64, 256, 0, s1>>>(counter, 1000000);
#if STREAMSAN_FIXED
  count<<<64, 256, 0, s2>>>(counter, 0);
#else
  reset<<<1, 32, 0, s2>>>(counter);
#endif
  CHECK(cudaDeviceSynchronize());
  unsigned host = 0;
  CHECK(cudaMemcpy(&host, counter, sizeof(unsigned), cudaMemcpyDeviceToHost));
  std::printf("counter = %u (expected %u)\n", host, STREAMSAN_FIXED ? 2u * 64 * 256 : 64u * 256);
  CHECK(cudaFree(counter));
  return 0;
}
