// Shared by the example programs: error checking and two tiny kernels.
//
// Every example is built twice from one source: as is (the racy version)
// and with STREAMSAN_FIXED=1 (the fixed version); the #if blocks are the
// whole difference.
#pragma once

#include <cuda_runtime.h>
#include <streamsan/annotate.h>

#include <cstdio>
#include <cstdlib>

#ifndef STREAMSAN_FIXED
#define STREAMSAN_FIXED 0
#endif

#define CHECK(call)                                                              \
  do {                                                                           \
    const cudaError_t check_status_ = (call);                                    \
    if (check_status_ != cudaSuccess) {                                          \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,         \
                   cudaGetErrorString(check_status_));                           \
      std::exit(2);                                                              \
    }                                                                            \
  } while (0)

// Busy for about `cycles` clock ticks, so that unsynchronized work really
// overlaps when the program runs natively.
__device__ inline void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void fill(float* out, int n, float value, long long cycles) {
  spin(cycles);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = value;
  }
}

__global__ void sum_into(const float* in, int n, float* result, long long cycles) {
  spin(cycles);
  float s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += in[i];
  atomicAdd(result, s);
}

// The host reads `n` floats of pinned memory and adds them up. streamsan
// sees host accesses only when told (include/streamsan/annotate.h, a no-op
// outside `streamsan run`), so the read is announced first.
inline float host_sum(const float* pinned, int n) {
  streamsan_host_read(pinned, static_cast<size_t>(n) * sizeof(float));
  float total = 0;
  for (int i = 0; i < n; ++i) total += pinned[i];
  return total;
}

// The float at `device_value`, once stream `s` has finished with it.
inline float download(const float* device_value, cudaStream_t s) {
  float host = 0;
  CHECK(cudaMemcpyAsync(&host, device_value, sizeof(float), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  return host;
}

// Prints a result; the fixed version of an example fails (exit status 1) when
// it is wrong, so that running it on a GPU also checks that CUDA really gives
// the ordering the fix relies on. A racy version may print anything.
inline int report_result(const char* what, float got, float expected) {
  std::printf("%s = %.0f (expected %.0f)\n", what, got, expected);
  if (STREAMSAN_FIXED && got != expected) {
    std::fprintf(stderr, "FAIL: the fixed version got a wrong %s\n", what);
    return 1;
  }
  return 0;
}
