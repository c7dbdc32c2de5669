// A kernel whose extent is a run-time argument: it writes out[begin,
// begin + count) through the buffer's base pointer (issue #8). Two streams
// write [0, half) and [half, n) of one buffer: disjoint, which only the
// measured extent shows (the pointer is the same base in both launches).
// In the racy version the second range starts one element early.
#include "example_common.h"

__global__ void write_range(float* out, int begin, int count, float value, long long cycles) {
  spin(cycles);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    out[begin + i] = value;
  }
}

int main() {
  const int n = 1 << 16, half = n / 2;
  float* out;
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&out, n * sizeof(float)));
  const int second = STREAMSAN_FIXED ? half : half - 1;
  write_range<<<32, 256, 0, s1>>>(out, 0, half, 1.0f, 1000000);
  write_range<<<32, 256, 0, s2>>>(out, second, n - second, 2.0f, 0);
  CHECK(cudaDeviceSynchronize());
  float host = 0;
  CHECK(cudaMemcpy(&host, out + half - 1, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("out[half-1] = %.0f (expected 1)\n", host);
  CHECK(cudaFree(out));
  return 0;
}
