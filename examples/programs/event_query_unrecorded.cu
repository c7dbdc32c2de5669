// Querying an event that was never recorded answers cudaSuccess at once and
// orders nothing (S-EVENT-3, S-EVENT-4). On its own that is not an error
// (cuBLAS does it): the fixed version queries such an event too, and gets no
// report. Polling it to wait for a kernel is the bug: the racy version reads
// the pinned buffer the kernel is still writing. The fix polls an event
// recorded after the kernel (S-SYNC-2).
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float* pinned;
  cudaStream_t s;
  cudaEvent_t done, never_recorded;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&never_recorded, cudaEventDisableTiming));
  CHECK(cudaMallocHost(&pinned, n * sizeof(float)));
  for (int i = 0; i < n; ++i) pinned[i] = 0.0f;

  fill<<<64, 256, 0, s>>>(pinned, n, 1.0f, 1000000);
#if STREAMSAN_FIXED
  CHECK(cudaEventQuery(never_recorded));  // answers cudaSuccess; checks nothing
  CHECK(cudaEventRecord(done, s));
  cudaEvent_t awaited = done;
#else
  cudaEvent_t awaited = never_recorded;
#endif
  cudaError_t answer;
  while ((answer = cudaEventQuery(awaited)) == cudaErrorNotReady) {
  }
  CHECK(answer);
  const int status = report_result("total", host_sum(pinned, n), static_cast<float>(n));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaEventDestroy(done));
  CHECK(cudaEventDestroy(never_recorded));
  CHECK(cudaStreamDestroy(s));
  return status;
}
