// An instantiated graph's child graph node is given another child graph
// (cudaGraphExecChildGraphNodeSetParams, Note [Child graph edits]): the
// child memsetting A is replaced by one of the same shape memsetting B, so
// the next launch writes B, not A. Another stream then copies one buffer
// while the launch runs, without waiting for it: the racy version copies B
// (the launch writes it), the fixed version copies A (no launch after the
// edit touches A). A model that missed the edit would get both verdicts
// wrong.
#include "example_common.h"

namespace {

// A graph of one memset node that sets `bytes` bytes of `dst` to 1.
cudaGraph_t memset_graph(int* dst, size_t bytes) {
  cudaGraph_t g;
  CHECK(cudaGraphCreate(&g, 0));
  cudaMemsetParams p = {};
  p.dst = dst;
  p.value = 1;
  p.elementSize = 1;
  p.width = bytes;
  p.height = 1;
  cudaGraphNode_t node;
  CHECK(cudaGraphAddMemsetNode(&node, g, nullptr, 0, &p));
  return g;
}

}  // namespace

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

  cudaGraph_t child_a = memset_graph(a, bytes), child_b = memset_graph(b, bytes);
  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t child_node;
  CHECK(cudaGraphAddChildGraphNode(&child_node, graph, nullptr, 0, child_a));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));

  // From now on the exec's child writes B.
  CHECK(cudaGraphExecChildGraphNodeSetParams(exec, child_node, child_b));

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

  int first_a = -1, first_b = 0;
  CHECK(cudaMemcpy(&first_a, a, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&first_b, b, sizeof(int), cudaMemcpyDeviceToHost));
  // The edit took: the launch wrote B and left A alone.
  int status = report_result("b[0]", static_cast<float>(first_b), 0x01010101);
  status |= report_result("a[0]", static_cast<float>(first_a), 0);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaGraphDestroy(child_a));
  CHECK(cudaGraphDestroy(child_b));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(copy));
  return status;
}
