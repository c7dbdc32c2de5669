// A race-free program that walks through much of the API streamsan models:
// pitched and 3D allocations and copies, memsets, host-registered and
// managed memory, host functions, NVTX ranges, stream capture into a graph,
// cudaLaunchKernelExC, event queries, two host threads with their own
// streams, stream-ordered allocation from a pool. streamsan must model all
// of it without a single report. Built twice: with the legacy default
// stream and with --default-stream per-thread (the _ptsz/_ptds API).
#include <nvtx3/nvToolsExt.h>

#include <thread>
#include <vector>

#include "example_common.h"

namespace {

void CUDART_CB host_callback(void* flag) { *static_cast<int*>(flag) = 1; }

__global__ void add_one(float* data, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    data[i] += 1.0f;
  }
}

void worker(int id, float* out) {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* d;
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&d), 1024 * sizeof(float), s));
  fill<<<4, 256, 0, s>>>(d, 1024, static_cast<float>(id), 0);
  CHECK(cudaMemcpyAsync(out, d, 1024 * sizeof(float), cudaMemcpyDeviceToHost, s));
  CHECK(cudaFreeAsync(d, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaStreamDestroy(s));
}

}  // namespace

int main() {
  nvtxRangePushA("api tour");
  const int n = 1 << 14;
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithPriority(&s1, cudaStreamNonBlocking, -1));
  CHECK(cudaStreamCreate(&s2));

  // Pitched 2D memory, 2D copies and memsets.
  float* pitched;
  std::size_t pitch = 0;
  CHECK(cudaMallocPitch(reinterpret_cast<void**>(&pitched), &pitch, 256 * sizeof(float), 64));
  CHECK(cudaMemset2DAsync(pitched, pitch, 0, 256 * sizeof(float), 64, s1));
  std::vector<float> host2d(256 * 64, 2.0f);
  CHECK(cudaMemcpy2DAsync(pitched, pitch, host2d.data(), 256 * sizeof(float),
                          256 * sizeof(float), 64, cudaMemcpyHostToDevice, s1));
  // The synchronous copy runs on the default stream, which does not wait
  // for the non-blocking s1.
  CHECK(cudaStreamSynchronize(s1));
  CHECK(cudaMemcpy2D(host2d.data(), 256 * sizeof(float), pitched, pitch, 256 * sizeof(float), 64,
                     cudaMemcpyDeviceToHost));

  // 3D memory and a 3D copy.
  cudaPitchedPtr volume;
  const cudaExtent extent = make_cudaExtent(64 * sizeof(float), 8, 4);
  CHECK(cudaMalloc3D(&volume, extent));
  CHECK(cudaMemset3DAsync(volume, 0, extent, s2));
  cudaPitchedPtr volume2;
  CHECK(cudaMalloc3D(&volume2, extent));
  cudaMemcpy3DParms copy3d = {};
  copy3d.srcPtr = volume;
  copy3d.dstPtr = volume2;
  copy3d.extent = extent;
  copy3d.kind = cudaMemcpyDeviceToDevice;
  CHECK(cudaMemcpy3DAsync(&copy3d, s2));
  CHECK(cudaStreamSynchronize(s2));

  // Registered host memory, a host function, an event query loop.
  std::vector<float> registered(n, 1.0f);
  CHECK(cudaHostRegister(registered.data(), n * sizeof(float), cudaHostRegisterDefault));
  float* device;
  CHECK(cudaMalloc(&device, n * sizeof(float)));
  CHECK(cudaMemcpyAsync(device, registered.data(), n * sizeof(float), cudaMemcpyHostToDevice,
                        s1));
  add_one<<<32, 256, 0, s1>>>(device, n);
  int flag = 0;
  CHECK(cudaLaunchHostFunc(s1, host_callback, &flag));
  cudaEvent_t done;
  CHECK(cudaEventCreate(&done));
  CHECK(cudaEventRecord(done, s1));
  while (cudaEventQuery(done) == cudaErrorNotReady) {
  }
  CHECK(cudaMemcpy(registered.data(), device, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaHostUnregister(registered.data()));

  // Managed memory, touched by the host only after synchronizing.
  float* managed;
  CHECK(cudaMallocManaged(&managed, n * sizeof(float)));
  fill<<<32, 256, 0, s2>>>(managed, n, 3.0f, 0);
  CHECK(cudaStreamSynchronize(s2));
  const float managed_value = managed[n - 1];

  // Stream capture into a graph, launched twice.
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  add_one<<<32, 256, 0, s1>>>(device, n);
  CHECK(cudaMemsetAsync(pitched, 0, pitch, s1));
  add_one<<<32, 256, 0, s1>>>(device, n);
  CHECK(cudaStreamEndCapture(s1, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, s1));
  CHECK(cudaGraphLaunch(exec, s1));
  CHECK(cudaStreamSynchronize(s1));

  // cudaLaunchKernelExC with a launch configuration.
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(32);
  config.blockDim = dim3(256);
  config.stream = s2;
  void* args[] = {&device, const_cast<int*>(&n)};
  CHECK(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(add_one), args));
  CHECK(cudaStreamSynchronize(s2));

  // Stream-ordered allocation from an explicit pool.
  cudaMemPool_t pool;
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  CHECK(cudaMemPoolCreate(&pool, &props));
  float* pooled;
  CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&pooled), n * sizeof(float), pool, s2));
  fill<<<32, 256, 0, s2>>>(pooled, n, 4.0f, 0);
  CHECK(cudaFreeAsync(pooled, s2));
  CHECK(cudaStreamSynchronize(s2));
  CHECK(cudaMemPoolDestroy(pool));

  // Two host threads with streams of their own.
  std::vector<float> out_a(1024), out_b(1024);
  std::thread a(worker, 1, out_a.data()), b(worker, 2, out_b.data());
  a.join();
  b.join();

  CHECK(cudaDeviceSynchronize());
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaEventDestroy(done));
  CHECK(cudaFree(managed));
  CHECK(cudaFree(device));
  CHECK(cudaFree(volume.ptr));
  CHECK(cudaFree(volume2.ptr));
  CHECK(cudaFree(pitched));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  nvtxRangePop();
  std::printf("flag=%d managed=%.0f host2d=%.0f worker=%.0f/%.0f registered=%.0f\n", flag,
              managed_value, host2d[0], out_a[0], out_b[0], registered[0]);
  return 0;
}
