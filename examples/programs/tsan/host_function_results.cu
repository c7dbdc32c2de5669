// A host function that reads the device's results: it is enqueued on
// another stream than the copy that produces them, so nothing orders it
// after the copy (S-HOSTFN-1 orders it after its own stream's work only).
// The fix makes its stream wait for an event recorded after the copy.
#include "tsan_common.h"

struct results {
  const float* pinned;
  int n;
  float total;
};

void CUDART_CB add_up(void* data) {
  auto* r = static_cast<results*>(data);
  float total = 0;
  for (int i = 0; i < r->n; ++i) total += r->pinned[i];
  r->total = total;
}

int main() {
  const int n = 1 << 16;
  float *device, *pinned;
  cudaStream_t compute, callbacks;
  cudaEvent_t copied;
  CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&callbacks, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
  CHECK(cudaMalloc(&device, n * sizeof(float)));
  CHECK(cudaMallocHost(&pinned, n * sizeof(float)));
  fill<<<64, 256, 0, compute>>>(device, n, 1.0f, long_spin);
  CHECK(cudaMemcpyAsync(pinned, device, n * sizeof(float), cudaMemcpyDeviceToHost, compute));
  CHECK(cudaEventRecord(copied, compute));
#if STREAMSAN_FIXED
  CHECK(cudaStreamWaitEvent(callbacks, copied, 0));
#endif
  results r{pinned, n, 0};
  CHECK(cudaLaunchHostFunc(callbacks, add_up, &r));
  CHECK(cudaDeviceSynchronize());
  const int status = report_result("total", r.total, n);
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(device));
  CHECK(cudaEventDestroy(copied));
  CHECK(cudaStreamDestroy(compute));
  CHECK(cudaStreamDestroy(callbacks));
  return status;
}
