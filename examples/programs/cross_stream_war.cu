// Write-after-read across streams: stream 1 sums A while stream 2 already
// overwrites A with the next input. The overwrite must wait for the reader.
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float *a, *sum;
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaStreamCreate(&s2));
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  fill<<<64, 256>>>(a, n, 1.0f, 0);  // legacy stream: ordered before both
  CHECK(cudaDeviceSynchronize());

  sum_into<<<1, 256, 0, s1>>>(a, n, sum, 1000000);
#if STREAMSAN_FIXED
  cudaEvent_t read_done;
  CHECK(cudaEventCreateWithFlags(&read_done, cudaEventDisableTiming));
  CHECK(cudaEventRecord(read_done, s1));
  CHECK(cudaStreamWaitEvent(s2, read_done, 0));
#endif
  fill<<<64, 256, 0, s2>>>(a, n, 2.0f, 0);  // the next input

  CHECK(cudaDeviceSynchronize());
  float host = 0;
  CHECK(cudaMemcpy(&host, sum, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("sum = %.0f (expected %d)\n", host, n);
  CHECK(cudaFree(a));
  CHECK(cudaFree(sum));
  return 0;
}
