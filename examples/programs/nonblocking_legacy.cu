// A non-blocking stream does not synchronize with the legacy default stream
// (S-DEFAULT-2): the fill on stream 0 and the sum on the non-blocking
// stream are unordered. A blocking stream (the fix) waits for stream 0
// implicitly (S-DEFAULT-1).
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float *a, *sum;
  cudaStream_t s;
#if STREAMSAN_FIXED
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamDefault));
#else
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
#endif
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  CHECK(cudaDeviceSynchronize());

  fill<<<64, 256>>>(a, n, 1.0f, 1000000);  // the legacy default stream
  sum_into<<<1, 256, 0, s>>>(a, n, sum, 0);

  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaDeviceSynchronize());
  float host = 0;
  CHECK(cudaMemcpy(&host, sum, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("sum = %.0f (expected %d)\n", host, n);
  CHECK(cudaFree(a));
  CHECK(cudaFree(sum));
  return 0;
}
