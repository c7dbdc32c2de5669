// A pinned staging buffer refilled by the host while cudaMemcpyAsync may
// still be reading it (S-COPY-2: the copy is asynchronous). The fix waits
// for the copy's event before refilling.
#include "tsan_common.h"

int main() {
  const int n = 1 << 16;
  float *device, *staging;
  cudaStream_t s;
  cudaEvent_t copied;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
  CHECK(cudaMalloc(&device, n * sizeof(float)));
  CHECK(cudaMallocHost(&staging, n * sizeof(float)));
  float* result;
  CHECK(cudaMallocHost(&result, sizeof(float)));
  *result = 0;
  for (int batch = 0; batch < 2; ++batch) {
#if STREAMSAN_FIXED
    if (batch > 0) CHECK(cudaEventSynchronize(copied));
#endif
    for (int i = 0; i < n; ++i) staging[i] = 1.0f;  // refill the staging buffer
    fill<<<1, 1, 0, s>>>(device, 0, 0.0f, long_spin);  // the stream is busy
    CHECK(cudaMemcpyAsync(device, staging, n * sizeof(float), cudaMemcpyHostToDevice, s));
    CHECK(cudaEventRecord(copied, s));
    sum_into<<<1, 256, 0, s>>>(device, n, result, 0);
  }
  CHECK(cudaStreamSynchronize(s));
  const int status = report_result("total", *result, 2.0f * n);
  CHECK(cudaFreeHost(result));
  CHECK(cudaFreeHost(staging));
  CHECK(cudaFree(device));
  CHECK(cudaEventDestroy(copied));
  CHECK(cudaStreamDestroy(s));
  return status;
}
