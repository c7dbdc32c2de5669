// Thrust on two streams of the program's own. A `par_nosync` transform on
// one stream fills a vector that a `par` reduce on another stream then
// sums: nothing orders the reduce after the transform, so it may read
// values the transform has not written yet. The fixed version joins the
// streams with an event, as Thrust's documentation of par_nosync asks.
//
// What streamsan sees here is library code only: Thrust's and CUB's
// kernels take their pointers inside iterator and functor structs, the
// reduce allocates and frees its temporary storage and reads its result
// back, and the device_vectors are filled on the legacy stream. The race
// must be found through all of it, and nothing else reported.
#include "example_common.h"

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/reduce.h>
#include <thrust/transform.h>

struct slow_double {
  long long cycles;
  __device__ float operator()(float x) const {
    spin(cycles);
    return 2.0f * x;
  }
};

int main() {
  const int n = 1 << 16;
  thrust::device_vector<float> x(n, 1.0f), y(n, 0.0f);  // filled on the legacy stream
  cudaStream_t producer, consumer;
  CHECK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  CHECK(cudaDeviceSynchronize());

  thrust::transform(thrust::cuda::par_nosync.on(producer), x.begin(), x.end(), y.begin(),
                    slow_double{20000});
#if STREAMSAN_FIXED
  cudaEvent_t produced;
  CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  CHECK(cudaEventRecord(produced, producer));
  CHECK(cudaStreamWaitEvent(consumer, produced, 0));
#endif
  const float sum = thrust::reduce(thrust::cuda::par.on(consumer), y.begin(), y.end(), 0.0f);
  std::printf("sum = %.0f (expected %d)\n", sum, 2 * n);

  CHECK(cudaDeviceSynchronize());
#if STREAMSAN_FIXED
  CHECK(cudaEventDestroy(produced));
#endif
  CHECK(cudaStreamDestroy(producer));
  CHECK(cudaStreamDestroy(consumer));
  return 0;
}
