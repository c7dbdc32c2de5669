// cudaFree synchronizes the device for ordinary device memory (S-MEM-5), but
// not for memory from cudaMallocAsync: "this API will not perform any
// implicit synchronization when the pointer was allocated with
// cudaMallocAsync" (CUDA Runtime API, cudaFree). The racy version frees such
// memory while the kernel that writes it may still run (it usually gets away
// with it: the pool keeps the memory mapped); the fix synchronizes the stream
// first (or would use cudaFreeAsync on it).
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float* a;
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&a), n * sizeof(float), s));
  fill<<<64, 256, 0, s>>>(a, n, 1.0f, 0);
#if STREAMSAN_FIXED
  CHECK(cudaStreamSynchronize(s));
#endif
  CHECK(cudaFree(a));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaStreamDestroy(s));
  std::printf("done\n");
  return 0;
}
