// Kernels whose global-memory footprints are known, for checking what
// `--precise` measures (bench/precise/check_footprints.py compares). Prints
// each allocation ("alloc NAME BASE SIZE") and, per launch in order, what it
// must touch ("expect INDEX KERNEL KIND NAME BEGIN END", offsets in NAME).
#include <cuda_pipeline.h>

#include <cstdio>
#include <cstdlib>

#include "bench/precise/bench_cuda.h"

struct two_buffers {
  float* a;
  float* b;
};
struct weights {
  float* w;  // read only, through a non-const pointer
  int k;
};

__global__ void fill(float* p, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = 1.0f;
}
__global__ void strided(float* p, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 2) p[2 * i] = 2.0f;
}
__global__ void write_second(two_buffers s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) s.b[i] = 3.0f;
}
__global__ void apply_weights(weights w, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = w.w[i % w.k] * 2.0f;
}
__global__ void atomics(int* add, int* add_system, int* cas, int* plain) {
  atomicAdd(add, 1);
  atomicAdd_system(add_system, 1);
  atomicCAS(cas, 0, 1);
  if (threadIdx.x == 0) *plain = 7;
}
__global__ void vector_read(const float4* __restrict__ in, float* out, int n4) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    const float4 v = in[i];
    out[i] = v.x + v.y + v.z + v.w;
  }
}
__global__ void async_copy(const float* in, float* out, int n) {
  __shared__ float tile[256];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) __pipeline_memcpy_async(&tile[threadIdx.x], &in[i], sizeof(float));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  if (i < n) out[i] = tile[threadIdx.x] + 1.0f;
}
__global__ void odd_bytes(char* p, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[2 * i + 1] = 1;
}
__global__ void gather(const float* in, const int* index, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[index[i]];
}

int launches = 0;
void expect(const char* kernel, const char* kind, const char* name, long begin, long end) {
  std::printf("expect %d %s %s %s %ld %ld\n", launches, kernel, kind, name, begin, end);
}
template <class T>
T* alloc(const char* name, std::size_t bytes) {
  void* p;
  CHECK(cudaMalloc(&p, bytes));
  CHECK(cudaMemset(p, 0, bytes));
  // The memset runs on the legacy stream; the kernels below on non-blocking
  // streams are not ordered after it without this.
  CHECK(cudaDeviceSynchronize());
  std::printf("alloc %s %p %zu\n", name, p, bytes);
  return static_cast<T*>(p);
}
void done() {
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  ++launches;
}

int main() {
  constexpr int n = 1 << 16;  // 256 KiB of floats: 64 pages
  float* buf = alloc<float>("buf", n * sizeof(float));
  float* other = alloc<float>("other", n * sizeof(float));
  int* counters = alloc<int>("counters", 64);
  char* bytes = alloc<char>("bytes", 8192);
  int* index = alloc<int>("index", 256 * sizeof(int));
  cudaStream_t s[4];
  for (auto& x : s) CHECK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));

  // Four streams, four disjoint slices of one buffer.
  for (int k = 0; k < 4; ++k) {
    const int slice = n / 4;
    fill<<<slice / 256, 256, 0, s[k]>>>(buf + k * slice, slice);
    expect("fill", "write", "buf", 4L * k * slice, 4L * (k + 1) * slice);
    done();
  }
  // A neighbouring slice overlapping by one element.
  fill<<<(n / 4 + 1 + 255) / 256, 256, 0, s[1]>>>(buf + n / 4 - 1, n / 4 + 1);
  expect("fill", "write", "buf", 4L * (n / 4 - 1), 4L * (n / 2));
  done();
  // A run-time extent.
  fill<<<1, 256, 0, s[0]>>>(other, 100);
  expect("fill", "write", "other", 0, 400);
  done();
  strided<<<n / 256, 256>>>(buf, n);
  for (long i = 0; i < n / 2; ++i) expect("strided", "write", "buf", 8 * i, 8 * i + 4);
  done();
  write_second<<<n / 256, 256>>>(two_buffers{buf, other}, n);
  expect("write_second", "write", "other", 0, 4L * n);
  done();
  apply_weights<<<n / 256, 256>>>(weights{other, 1024}, buf, n);
  expect("apply_weights", "read", "other", 0, 4096);
  expect("apply_weights", "write", "buf", 0, 4L * n);
  done();
  atomics<<<4, 128>>>(counters, counters + 1, counters + 2, counters + 3);
  expect("atomics", "atomic", "counters", 0, 12);
  expect("atomics", "write", "counters", 12, 16);
  done();
  vector_read<<<n / 4 / 256, 256>>>(reinterpret_cast<const float4*>(buf), other, n / 4);
  expect("vector_read", "read", "buf", 0, 4L * n);
  expect("vector_read", "write", "other", 0, 4L * (n / 4));
  done();
  async_copy<<<n / 256, 256>>>(other, buf, n);
  expect("async_copy", "read", "other", 0, 4L * n);
  expect("async_copy", "write", "buf", 0, 4L * n);
  done();
  odd_bytes<<<4096 / 256, 256>>>(bytes, 4096);
  for (long i = 0; i < 4096; ++i) expect("odd_bytes", "write", "bytes", 2 * i + 1, 2 * i + 2);
  done();
  int host_index[256];
  for (int i = 0; i < 256; ++i) host_index[i] = (i * 37) % 256 * 16;
  CHECK(cudaMemcpy(index, host_index, sizeof host_index, cudaMemcpyHostToDevice));
  gather<<<1, 256>>>(buf, index, other, 256);
  expect("gather", "read", "index", 0, 1024);
  for (int i = 0; i < 256; ++i) {
    expect("gather", "read", "buf", 4L * host_index[i], 4L * host_index[i] + 4);
  }
  expect("gather", "write", "other", 0, 1024);
  done();
  std::printf("launches %d\n", launches);
  return 0;
}
