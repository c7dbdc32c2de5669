// A CUDA array (Note [CUDA arrays]) filled on one stream and read on
// another: s1 uploads a host image into the array, s2 copies the array into
// device memory. The racy version lets s2 start without waiting for s1;
// the fixed version records an event after the upload and makes s2 wait on
// it. Before arrays were modelled both copies touched nothing streamsan
// tracked (and were listed as unmodelled).
#include "example_common.h"

int main() {
  const size_t width = 256, height = 256;
  const size_t row = width * sizeof(float);
  float* host;
  float* out;
  CHECK(cudaMallocHost(&host, row * height));
  CHECK(cudaMalloc(&out, row * height));
  for (size_t i = 0; i < width * height; ++i) host[i] = 7.0f;
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array;
  CHECK(cudaMallocArray(&array, &desc, width, height));

  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaMemcpy2DToArrayAsync(array, 0, 0, host, row, row, height, cudaMemcpyHostToDevice, s1));
#if STREAMSAN_FIXED
  cudaEvent_t uploaded;
  CHECK(cudaEventCreateWithFlags(&uploaded, cudaEventDisableTiming));
  CHECK(cudaEventRecord(uploaded, s1));
  CHECK(cudaStreamWaitEvent(s2, uploaded, 0));
#endif
  CHECK(cudaMemcpy2DFromArrayAsync(out, row, array, 0, 0, row, height, cudaMemcpyDeviceToDevice,
                                   s2));
  CHECK(cudaDeviceSynchronize());

  float first = 0;
  CHECK(cudaMemcpy(&first, out, sizeof(float), cudaMemcpyDeviceToHost));
  const int status = report_result("out[0]", first, 7.0f);
#if STREAMSAN_FIXED
  CHECK(cudaEventDestroy(uploaded));
#endif
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFreeArray(array));
  CHECK(cudaFree(out));
  CHECK(cudaFreeHost(host));
  return status;
}
