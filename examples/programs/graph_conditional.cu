// A conditional node's body runs inside the graph launch (Note [Conditional
// nodes]): here an IF node, true by default, whose body sets B with a memset
// node. Another stream copies B while the launch may still run: the racy
// version does not wait for the launch, the fixed version waits for an event
// recorded after it. A model that dropped the body would see no access to B.
#include "example_common.h"

int main() {
  const int n = 1 << 20;
  const size_t bytes = n * sizeof(int);
  int *b, *copy;
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMalloc(&copy, bytes));
  CHECK(cudaMemset(b, 0, bytes));
  CHECK(cudaDeviceSynchronize());

  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle handle;
  CHECK(cudaGraphConditionalHandleCreate(&handle, graph, 1, cudaGraphCondAssignDefault));
  cudaGraphNodeParams conditional = {};
  conditional.type = cudaGraphNodeTypeConditional;
  conditional.conditional.handle = handle;
  conditional.conditional.type = cudaGraphCondTypeIf;
  conditional.conditional.size = 1;
  cudaGraphNode_t conditional_node;
  CHECK(cudaGraphAddNode(&conditional_node, graph, nullptr, nullptr, 0, &conditional));
  cudaGraph_t body = conditional.conditional.phGraph_out[0];

  cudaMemsetParams memset_params = {};
  memset_params.dst = b;
  memset_params.value = 1;
  memset_params.elementSize = 1;
  memset_params.width = bytes;
  memset_params.height = 1;
  cudaGraphNode_t memset_node;
  CHECK(cudaGraphAddMemsetNode(&memset_node, body, nullptr, 0, &memset_params));

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaGraphLaunch(exec, s1));
#if STREAMSAN_FIXED
  cudaEvent_t launched;
  CHECK(cudaEventCreateWithFlags(&launched, cudaEventDisableTiming));
  CHECK(cudaEventRecord(launched, s1));
  CHECK(cudaStreamWaitEvent(s2, launched, 0));
#endif
  CHECK(cudaMemcpyAsync(copy, b, bytes, cudaMemcpyDeviceToDevice, s2));
  CHECK(cudaDeviceSynchronize());

  int first = 0;
  CHECK(cudaMemcpy(&first, copy, sizeof(int), cudaMemcpyDeviceToHost));
  const int status = report_result("copy[0]", static_cast<float>(first), 0x01010101);
#if STREAMSAN_FIXED
  CHECK(cudaEventDestroy(launched));
#endif
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(b));
  CHECK(cudaFree(copy));
  return status;
}
