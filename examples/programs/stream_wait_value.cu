// Stream memory operations (Note [Stream memory operations]): one stream
// fills A and then writes a flag with cuStreamWriteValue32; another waits
// for the flag with cuStreamWaitValue32 and then copies A. The flag is the
// release and the acquire. The racy version writes the flag *before* the
// fill, so the wait does not cover it; the fixed version writes it after.
// The driver API is reached through cudaGetDriverEntryPointByVersion, so the
// program links the runtime only.
#include "driver_entry.h"

namespace {

using write_value_fn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
using wait_value_fn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

}  // namespace

int main() {
  const int n = 1 << 20;
  float *a, *copy;
  unsigned* flag;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&copy, n * sizeof(float)));
  CHECK(cudaMalloc(&flag, sizeof(unsigned)));
  CHECK(cudaMemset(flag, 0, sizeof(unsigned)));
  CHECK(cudaMemset(a, 0, n * sizeof(float)));
  CHECK(cudaDeviceSynchronize());
  const auto write_value = driver_entry<write_value_fn>("cuStreamWriteValue32");
  const auto wait_value = driver_entry<wait_value_fn>("cuStreamWaitValue32");
  const auto flag_address = reinterpret_cast<CUdeviceptr>(flag);

  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
#if !STREAMSAN_FIXED
  check(write_value(s1, flag_address, 1, CU_STREAM_WRITE_VALUE_DEFAULT), "cuStreamWriteValue32");
#endif
  fill<<<64, 256, 0, s1>>>(a, n, 1.0f, 1000000);
  CHECK(cudaGetLastError());
  // The fill's footprint measured or inferred, the copy's exact: a memset
  // gives an exact write to race with (S-COPY-4: the Async form is async).
  CHECK(cudaMemsetAsync(a, 0, sizeof(float), s1));
#if STREAMSAN_FIXED
  check(write_value(s1, flag_address, 1, CU_STREAM_WRITE_VALUE_DEFAULT), "cuStreamWriteValue32");
#endif
  check(wait_value(s2, flag_address, 1, CU_STREAM_WAIT_VALUE_GEQ), "cuStreamWaitValue32");
  CHECK(cudaMemcpyAsync(copy, a, n * sizeof(float), cudaMemcpyDeviceToDevice, s2));
  CHECK(cudaDeviceSynchronize());

  float last = 0;
  CHECK(cudaMemcpy(&last, copy + n - 1, sizeof(float), cudaMemcpyDeviceToHost));
  const int status = report_result("copy[n-1]", last, 1.0f);
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(a));
  CHECK(cudaFree(copy));
  CHECK(cudaFree(flag));
  return status;
}
