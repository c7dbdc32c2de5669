// An instantiated graph is edited (Note [Editing an instantiated graph]):
// cudaGraphExecMemsetNodeSetParams moves its memset node from A to B, so
// the next launch writes B, not A. Another stream then uses one buffer
// while the launch runs, without waiting for it: the racy version reads B
// (the launch writes it), the fixed version reads A (no launch after the
// edit touches A any more). A model that missed the edit would get both
// verdicts wrong.
#include "example_common.h"

int main() {
  const int n = 1 << 20;
  const size_t bytes = n * sizeof(int);
  int *a, *b, *copy;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMalloc(&copy, bytes));
  CHECK(cudaMemset(a, 0, bytes));
  CHECK(cudaMemset(b, 0, bytes));
  CHECK(cudaDeviceSynchronize());

  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaMemsetParams memset_params = {};
  memset_params.dst = a;
  memset_params.value = 1;
  memset_params.elementSize = 1;
  memset_params.width = bytes;
  memset_params.height = 1;
  cudaGraphNode_t memset_node;
  CHECK(cudaGraphAddMemsetNode(&memset_node, graph, nullptr, 0, &memset_params));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));

  // From now on the exec writes B.
  memset_params.dst = b;
  CHECK(cudaGraphExecMemsetNodeSetParams(exec, memset_node, &memset_params));

  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaGraphLaunch(exec, s1));
#if STREAMSAN_FIXED
  CHECK(cudaMemcpyAsync(copy, a, bytes, cudaMemcpyDeviceToDevice, s2));
#else
  CHECK(cudaMemcpyAsync(copy, b, bytes, cudaMemcpyDeviceToDevice, s2));
#endif
  CHECK(cudaDeviceSynchronize());

  int first_b = 0, first_copy = -1;
  CHECK(cudaMemcpy(&first_b, b, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&first_copy, copy, sizeof(int), cudaMemcpyDeviceToHost));
  // The edit took: the launch wrote B; the fixed version copied untouched A.
  int status = report_result("b[0]", static_cast<float>(first_b), 0x01010101);
  status |= report_result("copy[0]", static_cast<float>(first_copy), 0);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(copy));
  return status;
}
