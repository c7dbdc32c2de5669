// An event captures the work on its stream at the time of the record
// (S-EVENT-1). Here the producer records `ready` after filling A but before
// filling B; the consumer waits on `ready` and reads B, whose fill the
// event does not cover. The fix records the event after the last fill.
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float *a, *b, *sum;
  cudaStream_t producer, consumer;
  cudaEvent_t ready;
  CHECK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  CHECK(cudaDeviceSynchronize());

  fill<<<64, 256, 0, producer>>>(a, n, 1.0f, 0);
#if !STREAMSAN_FIXED
  CHECK(cudaEventRecord(ready, producer));
#endif
  fill<<<64, 256, 0, producer>>>(b, n, 2.0f, 1000000);
#if STREAMSAN_FIXED
  CHECK(cudaEventRecord(ready, producer));
#endif
  CHECK(cudaStreamWaitEvent(consumer, ready, 0));
  sum_into<<<1, 256, 0, consumer>>>(a, n, sum, 0);
  sum_into<<<1, 256, 0, consumer>>>(b, n, sum, 0);

  CHECK(cudaStreamSynchronize(consumer));
  CHECK(cudaStreamSynchronize(producer));
  float host = 0;
  CHECK(cudaMemcpy(&host, sum, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("sum = %.0f (expected %d)\n", host, 3 * n);
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(sum));
  return 0;
}
