// Two kernel nodes of one graph, of two different kernels, without an edge
// between them: the fill node writes the first half of A and the scale node
// the second half, so they need no edge. The racy version's fill node writes
// one element too many, into the scale node's half (S-GRAPH-2). Each kernel
// gets the whole buffer, so only measured footprints (streamsan run
// --precise) tell the two apart: inferred ones overlap in both versions.
#include "example_common.h"

__global__ void scale(float* out, int n, float factor) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] *= factor;
  }
}

int main() {
  const int n = 1 << 16, half = n / 2;
  float* a;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMemset(a, 0, n * sizeof(float)));
  CHECK(cudaDeviceSynchronize());

  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));

  float value = 1.0f, factor = 2.0f;
  long long no_cycles = 0;
  int fill_count = STREAMSAN_FIXED ? half : half + 1;
  void* fill_args[] = {&a, &fill_count, &value, &no_cycles};
  cudaKernelNodeParams fill_params = {};
  fill_params.func = reinterpret_cast<void*>(fill);
  fill_params.gridDim = dim3(32);
  fill_params.blockDim = dim3(256);
  fill_params.kernelParams = fill_args;
  cudaGraphNode_t fill_node;
  CHECK(cudaGraphAddKernelNode(&fill_node, graph, nullptr, 0, &fill_params));

  float* upper = a + half;
  int scale_count = n - half;
  void* scale_args[] = {&upper, &scale_count, &factor};
  cudaKernelNodeParams scale_params = {};
  scale_params.func = reinterpret_cast<void*>(scale);
  scale_params.gridDim = dim3(32);
  scale_params.blockDim = dim3(256);
  scale_params.kernelParams = scale_args;
  cudaGraphNode_t scale_node;
  CHECK(cudaGraphAddKernelNode(&scale_node, graph, nullptr, 0, &scale_params));

  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));

  float first = 0;
  CHECK(cudaMemcpy(&first, a, sizeof(float), cudaMemcpyDeviceToHost));
  const int status = report_result("a[0]", first, value);
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(a));
  return status;
}
