// A polling loop on cudaStreamQuery that gives up after a few tries and
// reads the results anyway: a query that answered cudaErrorNotReady orders
// nothing (S-SYNC-2). The fix polls until the stream is done.
#include "tsan_common.h"

int main() {
  const int n = 1 << 16;
  float *device, *pinned;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&device, n * sizeof(float)));
  CHECK(cudaMallocHost(&pinned, n * sizeof(float)));
  fill<<<64, 256, 0, s>>>(device, n, 1.0f, long_spin);
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, s));
  cudaError_t state = cudaErrorNotReady;
#if STREAMSAN_FIXED
  while ((state = cudaStreamQuery(s)) == cudaErrorNotReady) {
  }
#else
  for (int tries = 0; tries < 3 && (state = cudaStreamQuery(s)) == cudaErrorNotReady; ++tries) {
  }
#endif
  if (state != cudaSuccess && state != cudaErrorNotReady) CHECK(state);
  float total = 0;
  for (int i = 0; i < n; ++i) total += pinned[i];
  CHECK(cudaStreamSynchronize(s));
  const int status = report_result("total", total, n);
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(device));
  CHECK(cudaStreamDestroy(s));
  return status;
}
