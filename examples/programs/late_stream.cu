// A race that begins before the program's second stream exists: the legacy
// stream fills A, then a non-blocking stream is made and sums A without
// waiting (S-DEFAULT-2: the legacy stream does not order it).
//
// The default mode measures no launch while the program's work cannot
// overlap (Note [First launches are measured once work can overlap]), so
// the fill, launched once before the second stream, keeps its guessed
// footprint: the race is a possible race there, confirmed with --precise.
// The fixed version waits for the fill first.
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float *a, *sum;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  CHECK(cudaDeviceSynchronize());  // the memset is done before the side stream's sum

  fill<<<64, 256>>>(a, n, 1.0f, 1000000);
  cudaStream_t side;
  CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
#if STREAMSAN_FIXED
  CHECK(cudaStreamSynchronize(0));
#endif
  sum_into<<<1, 256, 0, side>>>(a, n, sum, 0);

  float host = 0;
  CHECK(cudaMemcpyAsync(&host, sum, sizeof(float), cudaMemcpyDeviceToHost, side));
  CHECK(cudaStreamSynchronize(side));
  std::printf("sum = %.0f (expected %d)\n", host, n);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaStreamDestroy(side));
  CHECK(cudaFree(a));
  CHECK(cudaFree(sum));
  return 0;
}
