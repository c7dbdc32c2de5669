// Two GPUs. cudaDeviceSynchronize waits for the *current* device only
// (S-SYNC-1, S-DEV-1): after a kernel on device 0 writes mapped pinned
// memory, synchronizing device 1 does not make the host read safe. The fix
// synchronizes device 0.
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float* pinned;
  cudaStream_t s0;
  CHECK(cudaSetDevice(0));
  CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CHECK(cudaHostAlloc(&pinned, n * sizeof(float), cudaHostAllocMapped | cudaHostAllocPortable));
  CHECK(cudaSetDevice(1));
  CHECK(cudaFree(nullptr));  // device 1's context exists before the race

  CHECK(cudaSetDevice(0));
  fill<<<64, 256, 0, s0>>>(pinned, n, 1.0f, 1000000);
#if STREAMSAN_FIXED
  CHECK(cudaDeviceSynchronize());
#else
  CHECK(cudaSetDevice(1));
  CHECK(cudaDeviceSynchronize());
#endif
  const int status = report_result("total", host_sum(pinned, n), static_cast<float>(n));
  CHECK(cudaSetDevice(0));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFreeHost(pinned));
  return status;
}
