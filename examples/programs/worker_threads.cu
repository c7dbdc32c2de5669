// Work handed to another host thread (Note [Host threads order what the log
// does not show]). The main thread fills A on its stream and hands A to a
// worker thread through a mutex and a condition variable; the worker sums A
// on a stream of its own. No event links the two streams: in the fixed
// version the main thread synchronizes its stream before the hand-off, and
// the hand-off, which streamsan does not see, orders the sum after the fill.
// The racy version hands A over without synchronizing: the sum may start
// before the fill has finished.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "example_common.h"

namespace {

struct hand_off {
  std::mutex mutex;
  std::condition_variable changed;
  bool ready = false;

  void give() {
    {
      std::lock_guard lock(mutex);
      ready = true;
    }
    changed.notify_one();
  }
  void take() {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return ready; });
  }
};

}  // namespace

int main() {
  const int n = 1 << 16;
  float *a, *sum;
  cudaStream_t mine;
  CHECK(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  CHECK(cudaDeviceSynchronize());

  hand_off a_filled;
  float host = 0;
  std::thread worker([&] {
    cudaStream_t theirs;
    CHECK(cudaStreamCreateWithFlags(&theirs, cudaStreamNonBlocking));
    a_filled.take();
    sum_into<<<1, 256, 0, theirs>>>(a, n, sum, 0);
    CHECK(cudaMemcpyAsync(&host, sum, sizeof(float), cudaMemcpyDeviceToHost, theirs));
    CHECK(cudaStreamSynchronize(theirs));
    CHECK(cudaStreamDestroy(theirs));
  });

  fill<<<64, 256, 0, mine>>>(a, n, 1.0f, 1000000);
#if STREAMSAN_FIXED
  CHECK(cudaStreamSynchronize(mine));
#endif
  a_filled.give();
  worker.join();

  std::printf("sum = %.0f (expected %d)\n", host, n);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaStreamDestroy(mine));
  CHECK(cudaFree(a));
  CHECK(cudaFree(sum));
  return 0;
}
