// Work before and after cudaDeviceReset, which destroys the primary
// context; the next CUDA call makes a new one, often at the same handle.
// Before the reset, fill and sum_into run on two streams, ordered by an
// event, several times (their footprint tables go back to the tracker's
// pools). After it, the same kernels run again on new buffers and streams:
// the racy version sums A on the second stream without waiting for the
// fill (S-STREAM-1); the fixed version waits for an event first and checks
// the sums, which a table of the destroyed context written into the new
// buffers would spoil (Note [What a destroyed context took with it]).
#include "example_common.h"

namespace {

// Three rounds of fill on `first`, sum_into on `second`; waits for the
// fill when `ordered`. The last round's sum.
float rounds(float* a, float* sum, int n, cudaStream_t first, cudaStream_t second,
             cudaEvent_t filled, bool ordered) {
  float host = 0;
  for (int round = 0; round < 3; ++round) {
    CHECK(cudaMemsetAsync(sum, 0, sizeof(float), second));
    fill<<<64, 256, 0, first>>>(a, n, 1.0f, ordered ? 0 : 1000000);
    CHECK(cudaEventRecord(filled, first));
    if (ordered) CHECK(cudaStreamWaitEvent(second, filled, 0));
    sum_into<<<1, 256, 0, second>>>(a, n, sum, 0);
    CHECK(cudaMemcpyAsync(&host, sum, sizeof(float), cudaMemcpyDeviceToHost, second));
    CHECK(cudaStreamSynchronize(second));
    CHECK(cudaStreamSynchronize(first));
  }
  return host;
}

// One phase on buffers and streams of its own; 0 when the sums are right
// (or not checked).
int phase(int n, bool ordered) {
  float *a, *sum;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  cudaStream_t first, second;
  CHECK(cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking));
  cudaEvent_t filled;
  CHECK(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
  const float got = rounds(a, sum, n, first, second, filled, ordered);
  std::printf("sum = %.0f (expected %d)\n", got, n);
  CHECK(cudaEventDestroy(filled));
  CHECK(cudaStreamDestroy(first));
  CHECK(cudaStreamDestroy(second));
  CHECK(cudaFree(a));
  CHECK(cudaFree(sum));
  return ordered && got != static_cast<float>(n) ? 1 : 0;
}

}  // namespace

int main() {
  const int n = 1 << 16;
  int wrong = phase(n, true);
  CHECK(cudaDeviceReset());
#if STREAMSAN_FIXED
  wrong += phase(n, true);
#else
  wrong += phase(n, false);
#endif
  return wrong == 0 ? 0 : 3;
}
