// cudaMemset of managed memory is fully synchronous (S-COPY-4): it has run,
// after the busy legacy default stream, when the call returns, so a kernel
// launched next on a non-blocking stream reads the cleared buffer. The racy
// version uses cudaMemsetAsync, which is asynchronous for every target: the
// kernel may read the buffer before it is cleared.
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float *busy, *m, *sum;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&busy, n * sizeof(float)));
  CHECK(cudaMallocManaged(&m, n * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  for (int i = 0; i < n; ++i) m[i] = 1.0f;
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  CHECK(cudaDeviceSynchronize());

  fill<<<64, 256>>>(busy, n, 2.0f, 1000000);  // keeps the legacy stream busy
#if STREAMSAN_FIXED
  CHECK(cudaMemset(m, 0, n * sizeof(float)));
#else
  CHECK(cudaMemsetAsync(m, 0, n * sizeof(float), 0));
#endif
  sum_into<<<1, 256, 0, s>>>(m, n, sum, 0);

  float host = -1;
  CHECK(cudaMemcpyAsync(&host, sum, sizeof(float), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  const int status = report_result("sum", host, 0.0f);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(busy));
  CHECK(cudaFree(m));
  CHECK(cudaFree(sum));
  CHECK(cudaStreamDestroy(s));
  return status;
}
