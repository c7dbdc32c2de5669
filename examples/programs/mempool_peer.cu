// Two GPUs, stream-ordered allocation across devices. Memory from device 0's
// pool, made accessible to device 1 with cudaMemPoolSetAccess, is ordered on
// the allocating stream (S-MEM-*): a kernel on device 1 that reads it needs an
// event from device 0's stream. The racy version omits it; both versions
// hand the block back to device 0's stream before freeing it there.
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float *a, *sum;
  cudaStream_t s0, s1;
  cudaMemPool_t pool0;
  CHECK(cudaSetDevice(1));
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaSetDevice(0));
  CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CHECK(cudaDeviceGetDefaultMemPool(&pool0, 0));
  cudaMemAccessDesc access = {};
  access.location.type = cudaMemLocationTypeDevice;
  access.location.id = 1;
  access.flags = cudaMemAccessFlagsProtReadWrite;
  CHECK(cudaMemPoolSetAccess(pool0, &access, 1));

  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&a), n * sizeof(float), s0));
  fill<<<64, 256, 0, s0>>>(a, n, 1.0f, 1000000);
  cudaEvent_t filled, read_done;
  CHECK(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
  CHECK(cudaEventRecord(filled, s0));
  CHECK(cudaSetDevice(1));
  CHECK(cudaEventCreateWithFlags(&read_done, cudaEventDisableTiming));
#if STREAMSAN_FIXED
  CHECK(cudaStreamWaitEvent(s1, filled, 0));
#endif
  sum_into<<<1, 256, 0, s1>>>(a, n, sum, 0);
  CHECK(cudaEventRecord(read_done, s1));
  const int status = report_result("sum", download(sum, s1), static_cast<float>(n));
  CHECK(cudaSetDevice(0));
  CHECK(cudaStreamWaitEvent(s0, read_done, 0));
  CHECK(cudaFreeAsync(a, s0));
  CHECK(cudaStreamSynchronize(s0));
  CHECK(cudaSetDevice(1));
  CHECK(cudaFree(sum));
  return status;
}
