// Two GPUs. A peer copy is ordered on the stream it is issued to only
// (S-COPY-5, S-STREAM-2): device 1 copies device 0's buffer while a kernel on
// device 0 may still be filling it. The fix makes device 1's stream wait for
// an event recorded on device 0's stream (events order streams of any
// device, S-EVENT-*).
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  const size_t bytes = n * sizeof(float);
  float *on0, *on1, *sum;
  cudaStream_t s0, s1;
  CHECK(cudaSetDevice(0));
  CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&on0, bytes));
  CHECK(cudaSetDevice(1));
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&on1, bytes));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  CHECK(cudaDeviceSynchronize());

  CHECK(cudaSetDevice(0));
  fill<<<64, 256, 0, s0>>>(on0, n, 1.0f, 1000000);
#if STREAMSAN_FIXED
  cudaEvent_t filled;
  CHECK(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
  CHECK(cudaEventRecord(filled, s0));
  CHECK(cudaSetDevice(1));
  CHECK(cudaStreamWaitEvent(s1, filled, 0));
#endif
  CHECK(cudaSetDevice(1));
  CHECK(cudaMemcpyPeerAsync(on1, 1, on0, 0, bytes, s1));
  sum_into<<<1, 256, 0, s1>>>(on1, n, sum, 0);
  const int status = report_result("sum", download(sum, s1), static_cast<float>(n));
  CHECK(cudaSetDevice(0));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(on0));
  CHECK(cudaSetDevice(1));
  CHECK(cudaFree(on1));
  CHECK(cudaFree(sum));
  return status;
}
