// What the GPU programs of bench/precise share: a check that names the
// failed call's place and error, and the triad kernel of the
// bandwidth-bound ones.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                              \
  do {                                                                           \
    cudaError_t e_ = (call);                                                     \
    if (e_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

// STREAM's triad, c = a + s * b, in a grid-stride loop.
__global__ inline void triad(float* c, const float* a, const float* b, float s, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    c[i] = a[i] + s * b[i];
  }
}
