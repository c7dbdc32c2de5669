// Two GPUs with peer access. The legacy default stream synchronizes with the
// blocking streams of its own device only (S-DEFAULT-1, S-STREAM-8): a kernel
// on device 1's blocking stream that reads device 0's buffer directly is not
// ordered after device 0's legacy-stream kernel that writes it. The fix
// records an event on device 0's default stream and waits for it on device 1.
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float *on0, *sum;
  cudaStream_t s1;
  CHECK(cudaSetDevice(0));
  CHECK(cudaMalloc(&on0, n * sizeof(float)));
  CHECK(cudaSetDevice(1));
  CHECK(cudaDeviceEnablePeerAccess(0, 0));
  CHECK(cudaStreamCreate(&s1));  // blocking: ordered with device 1's legacy stream only
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  CHECK(cudaDeviceSynchronize());

  CHECK(cudaSetDevice(0));
  fill<<<64, 256>>>(on0, n, 1.0f, 1000000);
#if STREAMSAN_FIXED
  cudaEvent_t filled;
  CHECK(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
  CHECK(cudaEventRecord(filled, 0));
  CHECK(cudaSetDevice(1));
  CHECK(cudaStreamWaitEvent(s1, filled, 0));
#endif
  CHECK(cudaSetDevice(1));
  sum_into<<<1, 256, 0, s1>>>(on0, n, sum, 0);
  const int status = report_result("sum", download(sum, s1), static_cast<float>(n));
  CHECK(cudaSetDevice(0));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(on0));
  CHECK(cudaSetDevice(1));
  CHECK(cudaFree(sum));
  return status;
}
