// cudaMemcpyAsync between host buffers is synchronous (S-COPY-2), and it is
// an operation of its stream (S-STREAM-1): it runs after the stream's fill of
// the pinned buffer and has completed when it returns. The racy version
// issues the copy to another non-blocking stream, which does not wait for
// the fill (S-STREAM-2).
#include "example_common.h"

#include <vector>

int main() {
  const int n = 1 << 16;
  float* pinned;
  cudaStream_t s, other;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  CHECK(cudaMallocHost(&pinned, n * sizeof(float)));
  for (int i = 0; i < n; ++i) pinned[i] = 0.0f;
  std::vector<float> copy(n, -1.0f);

  fill<<<64, 256, 0, s>>>(pinned, n, 1.0f, 1000000);
#if STREAMSAN_FIXED
  CHECK(cudaMemcpyAsync(copy.data(), pinned, n * sizeof(float), cudaMemcpyHostToHost, s));
#else
  CHECK(cudaMemcpyAsync(copy.data(), pinned, n * sizeof(float), cudaMemcpyHostToHost, other));
#endif
  float total = 0;
  for (const float x : copy) total += x;
  const int status = report_result("total", total, static_cast<float>(n));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaStreamDestroy(other));
  return status;
}
