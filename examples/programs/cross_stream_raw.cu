// Read-after-write across streams (S-STREAM-2): stream 1 fills A, stream 2
// sums A. Without an event between them the sum may start before the fill.
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
  CHECK(cudaDeviceSynchronize());

  fill<<<64, 256, 0, s1>>>(a, n, 1.0f, 1000000);
#if STREAMSAN_FIXED
  cudaEvent_t filled;
  CHECK(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
  CHECK(cudaEventRecord(filled, s1));
  CHECK(cudaStreamWaitEvent(s2, filled, 0));
#endif
  sum_into<<<1, 256, 0, s2>>>(a, n, sum, 0);

  float host = 0;
  CHECK(cudaMemcpyAsync(&host, sum, sizeof(float), cudaMemcpyDeviceToHost, s2));
  CHECK(cudaStreamSynchronize(s2));
  std::printf("sum = %.0f (expected %d)\n", host, n);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(a));
  CHECK(cudaFree(sum));
  return 0;
}
