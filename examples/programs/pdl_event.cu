// Programmatic dependent launch's event (Note [Programmatic dependent
// launch]): a fill on one stream is launched with cudaLaunchKernelEx and the
// cudaLaunchAttributeProgrammaticEvent attribute; the event fires once every
// block of the fill has exited (it never triggers early). Another stream
// copies the filled buffer. The fixed version makes the copy wait for the
// programmatic event (the event is never recorded by cudaEventRecord: that
// wait must not be taken for a wait on a never-recorded event); the racy
// version does not wait. Programmatic events need compute capability 9.0.
#include "example_common.h"

int main() {
  const int n = 1 << 20;
  float *a, *copy;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&copy, n * sizeof(float)));
  CHECK(cudaMemset(a, 0, n * sizeof(float)));
  CHECK(cudaDeviceSynchronize());

  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t done;  // programmatic events must not time
  CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));

  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticEvent;
  attribute.val.programmaticEvent.event = done;
  attribute.val.programmaticEvent.flags = 0;
  attribute.val.programmaticEvent.triggerAtBlockStart = 0;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(64);
  config.blockDim = dim3(256);
  config.stream = s1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  CHECK(cudaLaunchKernelEx(&config, fill, a, n, 1.0f, 1000000LL));
#if STREAMSAN_FIXED
  CHECK(cudaStreamWaitEvent(s2, done, 0));
#endif
  CHECK(cudaMemcpyAsync(copy, a, n * sizeof(float), cudaMemcpyDeviceToDevice, s2));
  CHECK(cudaDeviceSynchronize());

  float last = 0;
  CHECK(cudaMemcpy(&last, copy + n - 1, sizeof(float), cudaMemcpyDeviceToHost));
  const int status = report_result("copy[n-1]", last, 1.0f);
  CHECK(cudaEventDestroy(done));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(a));
  CHECK(cudaFree(copy));
  return status;
}
