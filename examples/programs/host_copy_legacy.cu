// A host-to-host cudaMemcpy is issued to the legacy default stream, which
// waits for the prior work of every blocking stream (S-COPY-1, S-DEFAULT-1),
// and returns when it is done. So the fill of the pinned buffer on the
// blocking producer stream has finished when the host uploads it on a
// non-blocking stream. The racy version makes the producer non-blocking: the
// legacy stream does not wait for it (S-DEFAULT-2) and the upload races with
// the fill.
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float *pinned, *device, *sum;
  cudaStream_t producer, uploader;
#if STREAMSAN_FIXED
  CHECK(cudaStreamCreateWithFlags(&producer, cudaStreamDefault));
#else
  CHECK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
#endif
  CHECK(cudaStreamCreateWithFlags(&uploader, cudaStreamNonBlocking));
  CHECK(cudaMallocHost(&pinned, n * sizeof(float)));
  CHECK(cudaMalloc(&device, n * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  CHECK(cudaDeviceSynchronize());
  static float staging_in[256], staging_out[256];
  for (float& x : staging_in) x = 1.0f;

  fill<<<64, 256, 0, producer>>>(pinned, n, 1.0f, 1000000);
  CHECK(cudaMemcpy(staging_out, staging_in, sizeof(staging_in), cudaMemcpyHostToHost));
  CHECK(cudaMemcpyAsync(device, pinned, n * sizeof(float), cudaMemcpyHostToDevice, uploader));
  sum_into<<<1, 256, 0, uploader>>>(device, n, sum, 0);

  float host = 0;
  CHECK(cudaMemcpyAsync(&host, sum, sizeof(float), cudaMemcpyDeviceToHost, uploader));
  CHECK(cudaStreamSynchronize(uploader));
  const int status = report_result("sum", host, static_cast<float>(n));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFreeHost(pinned));
  CHECK(cudaFree(device));
  CHECK(cudaFree(sum));
  CHECK(cudaStreamDestroy(producer));
  CHECK(cudaStreamDestroy(uploader));
  return status;
}
