// A correct program as people write it: the classic overlapped pipeline.
// Input in pinned memory is cut into chunks; each of three streams uploads
// a chunk (cudaMemcpyAsync), zeroes a scratch buffer (cudaMemsetAsync), runs
// a kernel, downloads the result, and records an event; the host reuses a
// stream's pinned buffers only after that stream's previous event has
// completed, and a host function counts finished chunks. Must run clean
// under `streamsan run`.
#include <atomic>
#include <cstdio>

#include "../example_common.h"

__global__ void scale_add(const float* in, float* scratch, float* out, int n, float k) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    scratch[i] += in[i] * k;
    out[i] = scratch[i] + 1.0f;
  }
}

std::atomic<int> chunks_done{0};
void CUDART_CB count_chunk(void*) { chunks_done.fetch_add(1); }

int main() {
  constexpr int streams = 3, chunk = 1 << 18, chunks = 24;
  constexpr size_t bytes = chunk * sizeof(float);
  cudaStream_t s[streams];
  cudaEvent_t done[streams];
  float *host_in[streams], *host_out[streams], *d_in[streams], *d_scratch[streams], *d_out[streams];
  for (int i = 0; i < streams; ++i) {
    CHECK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming));
    CHECK(cudaHostAlloc(&host_in[i], bytes, cudaHostAllocDefault));
    CHECK(cudaMallocHost(&host_out[i], bytes));
    CHECK(cudaMalloc(&d_in[i], bytes));
    CHECK(cudaMalloc(&d_scratch[i], bytes));
    CHECK(cudaMalloc(&d_out[i], bytes));
  }
  bool pending[streams] = {};
  double total = 0;
  for (int c = 0; c < chunks; ++c) {
    const int i = c % streams;
    if (pending[i]) {
      // The stream's previous chunk is complete: its output can be read and
      // its pinned buffers refilled.
      CHECK(cudaEventSynchronize(done[i]));
      for (int j = 0; j < chunk; j += 4096) total += host_out[i][j];
    }
    for (int j = 0; j < chunk; ++j) host_in[i][j] = float(c + j % 7);
    CHECK(cudaMemcpyAsync(d_in[i], host_in[i], bytes, cudaMemcpyHostToDevice, s[i]));
    CHECK(cudaMemsetAsync(d_scratch[i], 0, bytes, s[i]));
    scale_add<<<chunk / 256, 256, 0, s[i]>>>(d_in[i], d_scratch[i], d_out[i], chunk, 0.5f);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(host_out[i], d_out[i], bytes, cudaMemcpyDeviceToHost, s[i]));
    CHECK(cudaLaunchHostFunc(s[i], count_chunk, nullptr));
    CHECK(cudaEventRecord(done[i], s[i]));
    pending[i] = true;
  }
  for (int i = 0; i < streams; ++i) {
    CHECK(cudaStreamSynchronize(s[i]));
    for (int j = 0; j < chunk; j += 4096) total += host_out[i][j];
  }
  std::printf("chunks %d, checksum %.1f\n", chunks_done.load(), total);
  for (int i = 0; i < streams; ++i) {
    CHECK(cudaFree(d_in[i]));
    CHECK(cudaFree(d_scratch[i]));
    CHECK(cudaFree(d_out[i]));
    CHECK(cudaFreeHost(host_in[i]));
    CHECK(cudaFreeHost(host_out[i]));
    CHECK(cudaEventDestroy(done[i]));
    CHECK(cudaStreamDestroy(s[i]));
  }
  return 0;
}
