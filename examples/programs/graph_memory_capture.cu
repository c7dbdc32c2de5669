// cudaMallocAsync and cudaFreeAsync on a capturing stream become the
// graph's alloc and free nodes. The captured graph allocates a scratch
// buffer, fills it, adds it up into `total` and frees the scratch buffer
// (alloc and free nodes inside the graph); `total`, allocated by the graph
// and not freed in it, outlives the launch. A reader stream copies it once
// ordered after the launch, then the owner frees it with cudaFreeAsync: the
// racy version frees it without waiting for the reader (free-while-in-use),
// the fixed one waits for an event recorded after the copy.
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  cudaStream_t owner, reader;
  CHECK(cudaStreamCreateWithFlags(&owner, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&reader, cudaStreamNonBlocking));
  cudaEvent_t launched, copied;
  CHECK(cudaEventCreateWithFlags(&launched, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));

  float *scratch, *total;
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(owner, cudaStreamCaptureModeGlobal));
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&scratch), n * sizeof(float), owner));
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&total), sizeof(float), owner));
  fill<<<64, 256, 0, owner>>>(scratch, n, 1.0f, 0);
  CHECK(cudaMemsetAsync(total, 0, sizeof(float), owner));
  sum_into<<<1, 256, 0, owner>>>(scratch, n, total, 0);
  CHECK(cudaFreeAsync(scratch, owner));
  CHECK(cudaStreamEndCapture(owner, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));

  CHECK(cudaGraphLaunch(exec, owner));
  CHECK(cudaEventRecord(launched, owner));
  CHECK(cudaStreamWaitEvent(reader, launched, 0));
  float* host_total;
  CHECK(cudaMallocHost(&host_total, sizeof(float)));
  CHECK(cudaMemcpyAsync(host_total, total, sizeof(float), cudaMemcpyDeviceToHost, reader));
#if STREAMSAN_FIXED
  CHECK(cudaEventRecord(copied, reader));
  CHECK(cudaStreamWaitEvent(owner, copied, 0));
#endif
  CHECK(cudaFreeAsync(total, owner));

  CHECK(cudaDeviceSynchronize());
  const float result = *host_total;
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFreeHost(host_total));
  return report_result("total", result, static_cast<float>(n));
}
