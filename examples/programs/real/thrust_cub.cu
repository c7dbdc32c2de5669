// A correct program as people write it with the toolkit's own libraries:
// Thrust algorithms on two streams (thrust::cuda::par_nosync.on), CUB's
// DeviceScan with its temporary storage from cudaMallocAsync, an event to
// join the streams, and the result copied back with thrust. Must run clean
// under `streamsan run`: every allocation, temporary buffer and kernel here
// belongs to Thrust or CUB, not to code we wrote around a rule.
#include <cub/device/device_scan.cuh>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/host_vector.h>
#include <thrust/reduce.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform.h>

#include <cstdio>

#include "../example_common.h"

struct square {
  __host__ __device__ float operator()(float x) const { return x * x; }
};

int main() {
  constexpr int n = 1 << 20;
  cudaStream_t a, b;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  thrust::device_vector<float> keys(n), squares(n), scanned(n);
  thrust::device_vector<int> ids(n);
  // (The constructors filled the vectors on the default stream and
  // synchronized it: thrust::device is a synchronous policy.)
  // Stream a: keys n-1 .. 0, sorted; stream b: ids 0 .. n-1.
  thrust::sequence(thrust::cuda::par_nosync.on(a), keys.begin(), keys.end(), float(n - 1), -1.0f);
  thrust::sort(thrust::cuda::par_nosync.on(a), keys.begin(), keys.end());
  thrust::sequence(thrust::cuda::par_nosync.on(b), ids.begin(), ids.end());
  cudaEvent_t sorted;
  CHECK(cudaEventCreateWithFlags(&sorted, cudaEventDisableTiming));
  CHECK(cudaEventRecord(sorted, a));
  CHECK(cudaStreamWaitEvent(b, sorted));
  // Stream b, after the sort: squares, then CUB's inclusive scan of them.
  thrust::transform(thrust::cuda::par_nosync.on(b), keys.begin(), keys.end(), squares.begin(), square());
  float* in = thrust::raw_pointer_cast(squares.data());
  float* out = thrust::raw_pointer_cast(scanned.data());
  size_t temp_bytes = 0;
  cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, in, out, n, b);
  void* temp = nullptr;
  CHECK(cudaMallocAsync(&temp, temp_bytes, b));
  cub::DeviceScan::InclusiveSum(temp, temp_bytes, in, out, n, b);
  CHECK(cudaFreeAsync(temp, b));
  const long long id_sum = thrust::reduce(thrust::cuda::par.on(b), ids.begin(), ids.end(), 0LL);
  CHECK(cudaStreamSynchronize(b));
  thrust::host_vector<float> tail(scanned.end() - 4, scanned.end());
  std::printf("id sum %lld, scan tail %.3e\n", id_sum, tail[3]);
  cudaEventDestroy(sorted);
  cudaStreamDestroy(a);
  cudaStreamDestroy(b);
  return 0;
}
