// Pointers inside a struct parameter are accesses too: the first launch
// writes `out` of its struct, the second reads the same buffer through the
// `in` member of its own struct, on another stream and unordered.
#include "example_common.h"

struct scale_args {
  const float* in;
  float* out;
  int n;
  float factor;
};

__global__ void scale(scale_args args, long long cycles) {
  spin(cycles);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < args.n; i += gridDim.x * blockDim.x) {
    args.out[i] = args.in[i] * args.factor;
  }
}

int main() {
  const int n = 1 << 16;
  float *x, *y, *z;
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMalloc(&z, n * sizeof(float)));
  fill<<<64, 256>>>(x, n, 1.0f, 0);
  CHECK(cudaDeviceSynchronize());

  scale<<<64, 256, 0, s1>>>(scale_args{x, y, n, 2.0f}, 1000000);  // y = 2x
#if STREAMSAN_FIXED
  cudaEvent_t y_ready;
  CHECK(cudaEventCreateWithFlags(&y_ready, cudaEventDisableTiming));
  CHECK(cudaEventRecord(y_ready, s1));
  CHECK(cudaStreamWaitEvent(s2, y_ready, 0));
#endif
  scale<<<64, 256, 0, s2>>>(scale_args{y, z, n, 3.0f}, 0);  // z = 3y

  CHECK(cudaDeviceSynchronize());
  float host = 0;
  CHECK(cudaMemcpy(&host, z + n - 1, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("z[n-1] = %.0f (expected 6)\n", host);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(z));
  return 0;
}
