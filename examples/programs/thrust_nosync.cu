// Thrust on two streams of the program's own. A `par_nosync` transform on
// one stream fills a vector that a `par_nosync` transform on another stream
// then reads: nothing orders the second after the first, so it may read
// values the first has not written yet. (On an H200 the sum still came
// out right natively, though the first spins before it writes: the second
// read what the first had written, which nothing promises.) The fixed
// version joins the streams with an event, as Thrust's documentation of
// par_nosync asks. A `par` reduce then sums the second's output on its
// own stream, ordered after it.
//
// What streamsan sees here is library code only: Thrust's and CUB's
// kernels take their pointers inside iterator and functor structs, the
// reduce allocates and frees its temporary storage and reads its result
// back, and the device_vectors are filled on the legacy stream. The race
// must be found through all of it, and nothing else reported.
#include "example_common.h"

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
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
  // Filled on the legacy stream.
  thrust::device_vector<float> x(n, 1.0f), y(n, 0.0f), z(n, 0.0f);
  cudaStream_t producer, consumer;
  CHECK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  CHECK(cudaDeviceSynchronize());

  // About 1 ms a thread before it writes: a consumer that started early reads zeros.
  thrust::transform(thrust::cuda::par_nosync.on(producer), x.begin(), x.end(), y.begin(),
                    slow_double{2000000});
#if STREAMSAN_FIXED
  cudaEvent_t produced;
  CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  CHECK(cudaEventRecord(produced, producer));
  CHECK(cudaStreamWaitEvent(consumer, produced, 0));
#endif
  thrust::transform(thrust::cuda::par_nosync.on(consumer), y.begin(), y.end(), z.begin(),
                    thrust::negate<float>());
  const float sum = thrust::reduce(thrust::cuda::par.on(consumer), z.begin(), z.end(), 0.0f);
  std::printf("sum = %.0f (expected %d)\n", sum, -2 * n);

  CHECK(cudaDeviceSynchronize());
#if STREAMSAN_FIXED
  CHECK(cudaEventDestroy(produced));
#endif
  CHECK(cudaStreamDestroy(producer));
  CHECK(cudaStreamDestroy(consumer));
  return 0;
}
