// A correct program as people write it with CUB's caching allocator: three
// streams take turns reducing and scanning, each asking the one allocator
// for its temporary storage and its output and handing them back when the
// work is queued. cub::CachingDeviceAllocator gives a block freed on one
// stream to another only once the event it recorded at the free has
// completed (cudaEventQuery), else it allocates a new one; nothing in this
// program orders the streams otherwise. Must run clean under
// `streamsan run`: the ordering is the library's, through an event query
// that succeeded, and blocks are reused without cudaFree.
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/util_allocator.cuh>

#include <algorithm>
#include <cstdio>

#include "../example_common.h"

__global__ void iota(int* out, int n, int offset) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = i + offset;
  }
}

int main() {
  constexpr int n = 1 << 18;
  constexpr int streams = 3;
  constexpr int rounds = 24;
  cub::CachingDeviceAllocator allocator;
  cudaStream_t stream[streams];
  for (auto& s : stream) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  long long* pinned = nullptr;
  CHECK(cudaMallocHost(&pinned, rounds * sizeof(long long)));

  for (int round = 0; round < rounds; ++round) {
    cudaStream_t s = stream[round % streams];
    int *in = nullptr, *scanned = nullptr;
    long long* sum = nullptr;
    CHECK(allocator.DeviceAllocate(reinterpret_cast<void**>(&in), n * sizeof(int), s));
    CHECK(allocator.DeviceAllocate(reinterpret_cast<void**>(&scanned), n * sizeof(int), s));
    CHECK(allocator.DeviceAllocate(reinterpret_cast<void**>(&sum), sizeof(long long), s));
    iota<<<64, 256, 0, s>>>(in, n, round);

    size_t reduce_bytes = 0, scan_bytes = 0;
    CHECK(cub::DeviceReduce::Sum(nullptr, reduce_bytes, in, sum, n, s));
    CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, in, scanned, n, s));
    void* temp = nullptr;
    CHECK(allocator.DeviceAllocate(&temp, std::max(reduce_bytes, scan_bytes), s));
    CHECK(cub::DeviceReduce::Sum(temp, reduce_bytes, in, sum, n, s));
    CHECK(cub::DeviceScan::ExclusiveSum(temp, scan_bytes, in, scanned, n, s));
    CHECK(cudaMemcpyAsync(pinned + round, sum, sizeof(long long), cudaMemcpyDeviceToHost, s));
    // Handed back while the stream still uses them: the allocator records
    // an event on `s` and reuses the blocks elsewhere only once it passed.
    for (void* p : {temp, static_cast<void*>(in), static_cast<void*>(scanned),
                    static_cast<void*>(sum)}) {
      CHECK(allocator.DeviceFree(p));
    }
  }
  for (auto& s : stream) CHECK(cudaStreamSynchronize(s));
  long long bad = 0;
  for (int round = 0; round < rounds; ++round) {
    const long long expected = static_cast<long long>(n) * (n - 1) / 2 + 1LL * n * round;
    if (pinned[round] != expected) ++bad;
  }
  std::printf("%d rounds on %d streams, %lld wrong sums\n", rounds, streams, bad);
  CHECK(cudaFreeHost(pinned));
  for (auto& s : stream) CHECK(cudaStreamDestroy(s));
  return bad == 0 ? 0 : 1;
}
