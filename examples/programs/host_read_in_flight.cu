// The host must not read a pinned buffer while an asynchronous copy into it
// is still running (S-COPY-2). streamsan sees host accesses only when told:
// the program says so with streamsan_host_read (include/streamsan/annotate.h,
// a no-op when not running under streamsan). The fix synchronizes first.
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float *device, *pinned;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&device, n * sizeof(float)));
  CHECK(cudaMallocHost(&pinned, n * sizeof(float)));
  fill<<<64, 256, 0, s>>>(device, n, 1.0f, 1000000);
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, s));
#if STREAMSAN_FIXED
  CHECK(cudaStreamSynchronize(s));
#endif
  std::printf("total = %.0f (expected %d)\n", host_sum(pinned, n), n);
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(device));
  return 0;
}
