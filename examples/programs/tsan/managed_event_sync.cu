// Managed memory read by the host before cudaEventSynchronize: the event is
// recorded after the kernel, but the host reads first and synchronizes
// after (S-EVENT-4). The fix synchronizes on the event before reading.
#include "tsan_common.h"

int main() {
  const int n = 1 << 16;
  float* data;
  cudaStream_t s;
  cudaEvent_t done;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaEventCreate(&done));
  CHECK(cudaMallocManaged(&data, n * sizeof(float)));
  fill<<<64, 256, 0, s>>>(data, n, 1.0f, long_spin);
  CHECK(cudaEventRecord(done, s));
#if STREAMSAN_FIXED
  CHECK(cudaEventSynchronize(done));
#endif
  float total = 0;
  for (int i = 0; i < n; ++i) total += data[i];
  CHECK(cudaEventSynchronize(done));
  const int status = report_result("total", total, n);
  CHECK(cudaFree(data));
  CHECK(cudaEventDestroy(done));
  CHECK(cudaStreamDestroy(s));
  return status;
}
