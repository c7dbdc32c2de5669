// An instantiated graph's event record node is switched to another event
// (cudaGraphExecEventRecordNodeSetEvent, Note [Event nodes]): the graph
// memsets A, then records `done`, no longer `old`. Another stream waits on
// one of the two events and copies A: the fixed version waits on `done`,
// which the launch records after its memset; the racy version waits on
// `old`, last recorded before the launch, so its copy is unordered with the
// memset. A model that missed the edit would get both verdicts wrong.
#include "example_common.h"

int main() {
  const int n = 1 << 20;
  const size_t bytes = n * sizeof(int);
  int *a, *copy;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&copy, bytes));
  CHECK(cudaMemset(a, 0, bytes));
  CHECK(cudaMemset(copy, 0, bytes));
  CHECK(cudaDeviceSynchronize());

  cudaEvent_t old, done;
  CHECK(cudaEventCreateWithFlags(&old, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));

  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaMemsetParams memset_params = {};
  memset_params.dst = a;
  memset_params.value = 1;
  memset_params.elementSize = 1;
  memset_params.width = bytes;
  memset_params.height = 1;
  cudaGraphNode_t memset_node, record_node;
  CHECK(cudaGraphAddMemsetNode(&memset_node, graph, nullptr, 0, &memset_params));
  CHECK(cudaGraphAddEventRecordNode(&record_node, graph, &memset_node, 1, old));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));

  // From now on the exec records `done`.
  CHECK(cudaGraphExecEventRecordNodeSetEvent(exec, record_node, done));

  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaEventRecord(old, s1));  // before the launch: orders nothing of it
  CHECK(cudaGraphLaunch(exec, s1));
#if STREAMSAN_FIXED
  CHECK(cudaStreamWaitEvent(s2, done, 0));
#else
  CHECK(cudaStreamWaitEvent(s2, old, 0));
#endif
  CHECK(cudaMemcpyAsync(copy, a, bytes, cudaMemcpyDeviceToDevice, s2));
  CHECK(cudaDeviceSynchronize());

  int first_copy = -1;
  CHECK(cudaMemcpy(&first_copy, copy, sizeof(int), cudaMemcpyDeviceToHost));
  // The fixed version copied A after the memset.
  const int status = report_result("copy[0]", static_cast<float>(first_copy), 0x01010101);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaEventDestroy(old));
  CHECK(cudaEventDestroy(done));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(a));
  CHECK(cudaFree(copy));
  return status;
}
