// A graph's alloc node makes memory that outlives the launch: work outside
// the graph may use it only once it is ordered after the launch (the guide's
// "Graph Memory Nodes": after the alloc node, before the free). Here a
// reader stream reads what the graph filled; the racy version does not wait
// for the launch (use-before-alloc), the fixed one waits for an event
// recorded after it. The memory is then freed by a free node of another
// graph, launched on the reader stream after the read.
#include "example_common.h"

int main() {
  const int n = 1 << 16;
  int device = 0;
  CHECK(cudaGetDevice(&device));
  cudaStream_t owner, reader;
  CHECK(cudaStreamCreateWithFlags(&owner, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&reader, cudaStreamNonBlocking));
  float* sum;
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaMemset(sum, 0, sizeof(float)));
  CHECK(cudaDeviceSynchronize());

  // alloc a -> fill(a): the graph does not free a.
  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaMemAllocNodeParams alloc{};
  alloc.bytesize = n * sizeof(float);
  alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location.type = cudaMemLocationTypeDevice;
  alloc.poolProps.location.id = device;
  cudaGraphNode_t alloc_node, fill_node;
  CHECK(cudaGraphAddMemAllocNode(&alloc_node, graph, nullptr, 0, &alloc));
  float* a = static_cast<float*>(alloc.dptr);
  float value = 1.0f;
  long long cycles = 1000000;
  int count = n;
  void* fill_args[] = {&a, &count, &value, &cycles};
  cudaKernelNodeParams kernel{};
  kernel.func = reinterpret_cast<void*>(fill);
  kernel.gridDim = dim3(64);
  kernel.blockDim = dim3(256);
  kernel.kernelParams = fill_args;
  CHECK(cudaGraphAddKernelNode(&fill_node, graph, &alloc_node, 1, &kernel));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));

  // A graph whose only node frees a.
  cudaGraph_t free_graph;
  cudaGraphNode_t free_node;
  CHECK(cudaGraphCreate(&free_graph, 0));
  CHECK(cudaGraphAddMemFreeNode(&free_node, free_graph, nullptr, 0, a));
  cudaGraphExec_t free_exec;
  CHECK(cudaGraphInstantiate(&free_exec, free_graph, 0));

  CHECK(cudaGraphLaunch(exec, owner));
#if STREAMSAN_FIXED
  cudaEvent_t launched;
  CHECK(cudaEventCreateWithFlags(&launched, cudaEventDisableTiming));
  CHECK(cudaEventRecord(launched, owner));
  CHECK(cudaStreamWaitEvent(reader, launched, 0));
#endif
  sum_into<<<1, 256, 0, reader>>>(a, n, sum, 0);
  CHECK(cudaGraphLaunch(free_exec, reader));

  CHECK(cudaDeviceSynchronize());
  const float total = download(sum, reader);
  CHECK(cudaGraphExecDestroy(free_exec));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(free_graph));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFree(sum));
  return report_result("sum", total, static_cast<float>(n));
}
