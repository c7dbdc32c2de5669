// A captured graph runs its nodes in any order the capture's event edges
// allow (S-GRAPH-2): the capture forks onto a second stream, which reads A
// while the origin stream's fill writes it, and nothing joins the two before
// the read. The fix makes the second stream wait for an event recorded after
// the fill. The report names the captured launches (enqueue_fill,
// enqueue_sum), not cudaGraphInstantiate: Note [Where graph nodes were made].
#include "example_common.h"

__attribute__((noinline)) void enqueue_fill(float* a, int n, cudaStream_t s) {
  fill<<<64, 256, 0, s>>>(a, n, 1.0f, 1000000);
  CHECK(cudaGetLastError());
}

__attribute__((noinline)) void enqueue_sum(const float* a, int n, float* sum, cudaStream_t s) {
  sum_into<<<1, 256, 0, s>>>(a, n, sum, 0);
  CHECK(cudaGetLastError());
}

int main() {
  const int n = 1 << 16;
  float *a, *sum;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  CHECK(cudaDeviceSynchronize());

  cudaStream_t origin, side;
  CHECK(cudaStreamCreateWithFlags(&origin, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  cudaEvent_t forked, filled, joined;
  CHECK(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));

  CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeGlobal));
  CHECK(cudaEventRecord(forked, origin));
  CHECK(cudaStreamWaitEvent(side, forked, 0));  // the side stream joins the capture
  enqueue_fill(a, n, origin);
#if STREAMSAN_FIXED
  CHECK(cudaEventRecord(filled, origin));
  CHECK(cudaStreamWaitEvent(side, filled, 0));
#endif
  enqueue_sum(a, n, sum, side);
  CHECK(cudaEventRecord(joined, side));
  CHECK(cudaStreamWaitEvent(origin, joined, 0));  // join before the capture ends
  cudaGraph_t graph;
  CHECK(cudaStreamEndCapture(origin, &graph));

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, origin));
  CHECK(cudaStreamSynchronize(origin));

  float host = 0;
  CHECK(cudaMemcpy(&host, sum, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("sum = %.0f (expected %d)\n", host, n);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaEventDestroy(forked));
  CHECK(cudaEventDestroy(filled));
  CHECK(cudaEventDestroy(joined));
  CHECK(cudaStreamDestroy(origin));
  CHECK(cudaStreamDestroy(side));
  CHECK(cudaFree(a));
  CHECK(cudaFree(sum));
  return 0;
}
