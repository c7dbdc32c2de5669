// One kernel in two nodes of one graph, on the two halves of one buffer: the
// probe of what a graph node given null per-launch data does with its
// function's per-function data (bench/precise/probe_inject.cpp,
// PROBE_MODE=graphs PROBE_GRAPH_FUNCDATA=1: the first kernel node of each
// graph launch gets a table as its function's data, every later node null
// per-launch data). Prints "half first BEGIN END" and "half second BEGIN
// END"; the probe prints the function data's footprint after each launch.
// If it holds the first half only, null per-launch data keeps a node out of
// its function's table, and a graph that runs one kernel in several nodes
// can be measured one node per launch without telling the nodes apart on
// the device (Note [Which graph nodes are measured]). With
// PROBE_GRAPH_FUNCDATA=pernode each node's callback sets a table of its
// own: whether the function's data is bound per node or per graph launch
// (H200, 2026-11-28: per launch, the last set winning). GRAPH_LAUNCHES
// launches the graph that many times (2 unless set), for
// PROBE_GRAPH_FUNCDATA=turns.
#include <cstdio>
#include <cstdlib>

#include "../injection/bench_check.h"

__global__ void fill(float* p, int n, float v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}

// GRAPH_OTHER=1: a third node, of another kernel, on a third part of the
// buffer (PROBE_GRAPH_FUNCDATA=slot).
__global__ void other(float* p, int n, float v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}

int main() {
  constexpr int half = 4096;
  const bool third = std::getenv("GRAPH_OTHER") != nullptr;
  float* a = nullptr;
  CHECK(cudaMalloc(&a, 3 * half * sizeof(float)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::printf("half first 0x%llx 0x%llx\n", reinterpret_cast<unsigned long long>(a),
              reinterpret_cast<unsigned long long>(a + half));
  std::printf("half second 0x%llx 0x%llx\n", reinterpret_cast<unsigned long long>(a + half),
              reinterpret_cast<unsigned long long>(a + 2 * half));
  if (third) {
    std::printf("third 0x%llx 0x%llx\n", reinterpret_cast<unsigned long long>(a + 2 * half),
                reinterpret_cast<unsigned long long>(a + 3 * half));
  }
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  fill<<<half / 256, 256, 0, s>>>(a, half, 1.0f);
  fill<<<half / 256, 256, 0, s>>>(a + half, half, 2.0f);
  if (third) other<<<half / 256, 256, 0, s>>>(a + 2 * half, half, 3.0f);
  CHECK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t e;
  CHECK(cudaGraphInstantiate(&e, g, 0));
  const char* launches_env = std::getenv("GRAPH_LAUNCHES");  // 2 unless set
  const int launches = launches_env != nullptr ? std::atoi(launches_env) : 2;
  for (int launch = 0; launch < launches; ++launch) {
    CHECK(cudaGraphLaunch(e, s));
    CHECK(cudaStreamSynchronize(s));
  }
  float first = 0, second = 0;
  CHECK(cudaMemcpy(&first, a, sizeof first, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&second, a + half, sizeof second, cudaMemcpyDeviceToHost));
  std::printf("values %.1f %.1f (expected 1.0 2.0)\n", first, second);
  CHECK(cudaGraphExecDestroy(e));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaFree(a));
  return 0;
}
