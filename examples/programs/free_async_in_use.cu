// cudaFreeAsync is ordered on its own stream only (S-MEM-5): freeing A on
// the allocating stream while another stream still reads it hands the
// memory back too early. The fix orders the free after the reader.
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float *a, *sum;
  cudaStream_t owner, reader;
  cudaEvent_t filled;
  CHECK(cudaStreamCreateWithFlags(&owner, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&reader, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  CHECK(cudaDeviceSynchronize());

  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&a), n * sizeof(float), owner));
  fill<<<64, 256, 0, owner>>>(a, n, 1.0f, 0);
  CHECK(cudaEventRecord(filled, owner));
  CHECK(cudaStreamWaitEvent(reader, filled, 0));
  sum_into<<<1, 256, 0, reader>>>(a, n, sum, 1000000);
#if STREAMSAN_FIXED
  cudaEvent_t read_done;
  CHECK(cudaEventCreateWithFlags(&read_done, cudaEventDisableTiming));
  CHECK(cudaEventRecord(read_done, reader));
  CHECK(cudaStreamWaitEvent(owner, read_done, 0));
#endif
  CHECK(cudaFreeAsync(a, owner));

  CHECK(cudaDeviceSynchronize());
  float host = 0;
  CHECK(cudaMemcpy(&host, sum, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("sum = %.0f (expected %d)\n", host, n);
  CHECK(cudaFree(sum));
  return 0;
}
