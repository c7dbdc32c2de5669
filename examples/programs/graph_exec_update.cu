// cudaGraphExecUpdate gives an instantiated graph the parameters of another
// graph of the same shape (Note [Editing an instantiated graph]): here its
// copy node reads B instead of A. Another stream then overwrites one buffer
// while the launch runs: the racy version B (which the updated launch
// reads), the fixed version A (which only the graph as first instantiated
// read). Also edits a kernel node the way jacobiCudaGraphs does
// (cudaGraphExecKernelNodeSetParams, modelled from the driver call it makes).
#include "example_common.h"

namespace {

cudaGraph_t copy_graph(int* dst, const int* src, size_t bytes, cudaGraphNode_t* node) {
  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  CHECK(cudaGraphAddMemcpyNode1D(node, graph, nullptr, 0, dst, src, bytes,
                                 cudaMemcpyDeviceToDevice));
  return graph;
}

}  // namespace

int main() {
  const int n = 1 << 20;
  const size_t bytes = n * sizeof(int);
  int *a, *b, *out;
  float* scratch;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMalloc(&out, bytes));
  CHECK(cudaMalloc(&scratch, n * sizeof(float)));
  CHECK(cudaMemset(a, 0, bytes));
  CHECK(cudaMemset(b, 0, bytes));
  CHECK(cudaDeviceSynchronize());

  cudaGraphNode_t first_node, second_node;
  cudaGraph_t first = copy_graph(out, a, bytes, &first_node);
  cudaGraph_t second = copy_graph(out, b, bytes, &second_node);
  // A kernel node after the copy, edited in place like jacobiCudaGraphs.
  float value = 1.0f;
  long long no_cycles = 0;
  int count = n;
  void* fill_args[] = {&scratch, &count, &value, &no_cycles};
  cudaKernelNodeParams fill_params = {};
  fill_params.func = reinterpret_cast<void*>(fill);
  fill_params.gridDim = dim3(64);
  fill_params.blockDim = dim3(256);
  fill_params.kernelParams = fill_args;
  cudaGraphNode_t fill_node, fill_node_second;
  CHECK(cudaGraphAddKernelNode(&fill_node, first, &first_node, 1, &fill_params));
  CHECK(cudaGraphAddKernelNode(&fill_node_second, second, &second_node, 1, &fill_params));

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, first, 0));
  cudaGraphExecUpdateResultInfo info;
  CHECK(cudaGraphExecUpdate(exec, second, &info));
  value = 2.0f;
  CHECK(cudaGraphExecKernelNodeSetParams(exec, fill_node, &fill_params));

  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaGraphLaunch(exec, s1));
#if STREAMSAN_FIXED
  CHECK(cudaMemsetAsync(a, 7, bytes, s2));
#else
  CHECK(cudaMemsetAsync(b, 7, bytes, s2));
#endif
  CHECK(cudaDeviceSynchronize());

  float first_scratch = 0;
  CHECK(cudaMemcpy(&first_scratch, scratch, sizeof(float), cudaMemcpyDeviceToHost));
  const int status = report_result("scratch[0]", first_scratch, 2.0f);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(first));
  CHECK(cudaGraphDestroy(second));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(out));
  CHECK(cudaFree(scratch));
  return status;
}
