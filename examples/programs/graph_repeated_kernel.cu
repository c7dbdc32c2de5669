// One kernel in two nodes of a captured graph: the capture forks onto a side
// stream, fill writes A on the origin stream and B on the side stream, and
// the origin's sum reads B while the side's fill may still write it (nothing
// joins the side before the read: S-GRAPH-2). The fix makes the origin wait
// for an event recorded after the side's fill. The graph is launched three
// times. Of the two fill nodes only the first (the origin's) is ever
// measured (Note [A graph node keeps its per-launch data]), so even with
// --precise the race stays a possible race (the side's fill keeps its
// inferred footprint) and never a confirmed one on an empty measurement;
// the fixed version gets no report in either mode.
#include "example_common.h"

__attribute__((noinline)) void enqueue_fill(float* p, int n, float value, cudaStream_t s) {
  fill<<<64, 256, 0, s>>>(p, n, value, 1000000);
  CHECK(cudaGetLastError());
}

__attribute__((noinline)) void enqueue_sum(const float* p, int n, float* sum, cudaStream_t s) {
  sum_into<<<1, 256, 0, s>>>(p, n, sum, 0);
  CHECK(cudaGetLastError());
}

int main() {
  const int n = 1 << 16;
  const int launches = 3;
  float *a, *b, *sum;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
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
  enqueue_fill(a, n, 1.0f, origin);
  enqueue_fill(b, n, 2.0f, side);
#if STREAMSAN_FIXED
  CHECK(cudaEventRecord(filled, side));
  CHECK(cudaStreamWaitEvent(origin, filled, 0));
#endif
  enqueue_sum(b, n, sum, origin);
  CHECK(cudaEventRecord(joined, side));
  CHECK(cudaStreamWaitEvent(origin, joined, 0));  // join before the capture ends
  cudaGraph_t graph;
  CHECK(cudaStreamEndCapture(origin, &graph));

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < launches; ++i) {
    CHECK(cudaGraphLaunch(exec, origin));
    CHECK(cudaStreamSynchronize(origin));
  }

  float host = 0;
  CHECK(cudaMemcpy(&host, sum, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("sum = %.0f (expected %d)\n", host, 2 * n * launches);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaEventDestroy(forked));
  CHECK(cudaEventDestroy(filled));
  CHECK(cudaEventDestroy(joined));
  CHECK(cudaStreamDestroy(origin));
  CHECK(cudaStreamDestroy(side));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(sum));
  return 0;
}
