// One weight matrix read by a kernel on each of two streams, through a
// non-const pointer inside a parameter struct, as a GEMM's parameters often
// are (issue #8). Reads do not race, so the fixed version gets no report;
// a guess from the parameter type would call both kernels writers. In the
// racy version the second stream updates the weights while the first still
// reads them.
#include "example_common.h"

struct layer {
  float* weights;  // not const, though apply() only reads it
  int n;
};

__global__ void apply(layer l, const float* in, float* out, long long cycles) {
  spin(cycles);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < l.n; i += gridDim.x * blockDim.x) {
    out[i] = in[i] * l.weights[i];
  }
}

__global__ void update(layer l, float step) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < l.n; i += gridDim.x * blockDim.x) {
    l.weights[i] += step;
  }
}

int main() {
  const int n = 1 << 16;
  float *w, *x, *y1, *y2;
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  for (float** p : {&w, &x, &y1, &y2}) CHECK(cudaMalloc(p, n * sizeof(float)));
  fill<<<64, 256>>>(w, n, 2.0f, 0);
  fill<<<64, 256>>>(x, n, 1.0f, 0);
  CHECK(cudaDeviceSynchronize());

  const layer l{w, n};
  apply<<<64, 256, 0, s1>>>(l, x, y1, 1000000);
#if STREAMSAN_FIXED
  apply<<<64, 256, 0, s2>>>(l, x, y2, 0);
#else
  update<<<64, 256, 0, s2>>>(l, 1.0f);  // rewrites what s1 still reads
#endif
  CHECK(cudaDeviceSynchronize());
  float host = 0;
  CHECK(cudaMemcpy(&host, y1 + n - 1, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("y1[n-1] = %.0f (expected 2)\n", host);
  for (float* p : {w, x, y1, y2}) CHECK(cudaFree(p));
  return 0;
}
