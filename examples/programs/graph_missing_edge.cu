// A graph runs its nodes in any order their edges allow (S-GRAPH-2): the
// sum node reads A, which the fill node writes, but the graph has no edge
// between them. The fix adds the edge.
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  float *a, *sum;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  CHECK(cudaDeviceSynchronize());

  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));

  float value = 1.0f;
  long long fill_cycles = 1000000, no_cycles = 0;
  int count = n;
  void* fill_args[] = {&a, &count, &value, &fill_cycles};
  cudaKernelNodeParams fill_params = {};
  fill_params.func = reinterpret_cast<void*>(fill);
  fill_params.gridDim = dim3(64);
  fill_params.blockDim = dim3(256);
  fill_params.kernelParams = fill_args;
  cudaGraphNode_t fill_node;
  CHECK(cudaGraphAddKernelNode(&fill_node, graph, nullptr, 0, &fill_params));

  void* sum_args[] = {&a, &count, &sum, &no_cycles};
  cudaKernelNodeParams sum_params = {};
  sum_params.func = reinterpret_cast<void*>(sum_into);
  sum_params.gridDim = dim3(1);
  sum_params.blockDim = dim3(256);
  sum_params.kernelParams = sum_args;
  cudaGraphNode_t sum_node;
#if STREAMSAN_FIXED
  CHECK(cudaGraphAddKernelNode(&sum_node, graph, &fill_node, 1, &sum_params));
#else
  CHECK(cudaGraphAddKernelNode(&sum_node, graph, nullptr, 0, &sum_params));
#endif

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));

  float host = 0;
  CHECK(cudaMemcpy(&host, sum, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("sum = %.0f (expected %d)\n", host, n);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFree(a));
  CHECK(cudaFree(sum));
  return 0;
}
