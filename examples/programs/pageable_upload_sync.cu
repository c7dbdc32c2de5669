// A cudaMemcpy from pageable memory to the device synchronizes the default
// stream, stages the source and returns (S-COPY-1); it does not wait for
// blocking streams' work issued after the last default-stream operation. So
// the host must not read what a blocking stream is still writing. The fix
// synchronizes that stream first (S-STREAM-5). The host read is announced
// to streamsan (host_sum, example_common.h).
#include <vector>

#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float *pinned, *device;
  cudaStream_t b;
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamDefault));
  CHECK(cudaMallocHost(&pinned, n * sizeof(float)));
  CHECK(cudaMalloc(&device, n * sizeof(float)));
  for (int i = 0; i < n; ++i) pinned[i] = 0.0f;
  std::vector<float> pageable(n, 2.0f);
  CHECK(cudaDeviceSynchronize());

  fill<<<64, 256, 0, b>>>(pinned, n, 1.0f, 1000000);
  CHECK(cudaMemcpy(device, pageable.data(), n * sizeof(float), cudaMemcpyHostToDevice));
#if STREAMSAN_FIXED
  CHECK(cudaStreamSynchronize(b));
#endif
  const int status = report_result("total", host_sum(pinned, n), static_cast<float>(n));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(device));
  CHECK(cudaStreamDestroy(b));
  return status;
}
