// The wrong stream synchronized: the kernel writes managed memory on
// `producer`, the host synchronizes `other` and reads (S-STREAM-5 orders the
// host after `other`'s work only). The fix synchronizes `producer`.
#include "tsan_common.h"

int main() {
  const int n = 1 << 16;
  float* data;
  cudaStream_t producer, other;
  CHECK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  CHECK(cudaMallocManaged(&data, n * sizeof(float)));
  fill<<<64, 256, 0, producer>>>(data, n, 1.0f, long_spin);
#if STREAMSAN_FIXED
  CHECK(cudaStreamSynchronize(producer));
#else
  CHECK(cudaStreamSynchronize(other));
#endif
  float total = 0;
  for (int i = 0; i < n; ++i) total += data[i];
  CHECK(cudaDeviceSynchronize());
  const int status = report_result("total", total, n);
  CHECK(cudaFree(data));
  CHECK(cudaStreamDestroy(producer));
  CHECK(cudaStreamDestroy(other));
  return status;
}
