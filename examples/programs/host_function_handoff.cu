// A host function tells another host thread that a device-to-host copy is
// done (S-HOSTFN-1), as XLA does for every result it reads back: a worker
// thread copies a result into a pinned staging buffer on one stream and
// enqueues a host function after it; the main thread waits for that
// function's signal, then reuses the staging buffer for an upload on
// another stream. The racy version does not wait for the signal, so the
// upload may read the buffer while the download still writes it (the
// download sits behind a slow kernel).
#include <atomic>
#include <thread>

#include "example_common.h"

namespace {

std::atomic<bool> downloaded{false};

void CUDART_CB signal_downloaded(void*) { downloaded.store(true, std::memory_order_release); }

}  // namespace

int main() {
  const int n = 1 << 14;
  const size_t bytes = n * sizeof(float);
  float *result, *input, *staging;
  cudaStream_t download, upload;
  CHECK(cudaStreamCreateWithFlags(&download, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&upload, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&result, bytes));
  CHECK(cudaMalloc(&input, bytes));
  CHECK(cudaMallocHost(&staging, bytes));
  CHECK(cudaDeviceSynchronize());

  std::thread worker([&] {
    fill<<<64, 256, 0, download>>>(result, n, 2.0f, 20000000);
    CHECK(cudaMemcpyAsync(staging, result, bytes, cudaMemcpyDeviceToHost, download));
    CHECK(cudaLaunchHostFunc(download, signal_downloaded, nullptr));
  });
  worker.join();
#if STREAMSAN_FIXED
  while (!downloaded.load(std::memory_order_acquire)) std::this_thread::yield();
  std::printf("result[0] = %.0f\n", staging[0]);
#endif
  // The staging buffer goes back to the pool and carries the next input.
  CHECK(cudaMemcpyAsync(input, staging, bytes, cudaMemcpyHostToDevice, upload));
  CHECK(cudaStreamSynchronize(upload));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFreeHost(staging));
  CHECK(cudaFree(input));
  CHECK(cudaFree(result));
  CHECK(cudaStreamDestroy(download));
  CHECK(cudaStreamDestroy(upload));
  return 0;
}
