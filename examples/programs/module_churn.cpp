// Threads that load and unload modules while other threads launch: race
// free, so no report is allowed, and it must end. The driver runs its
// module-loaded callback under a lock of its own while other threads'
// launches take streamsan's locks and call into the driver: an H200 run of
// UnifiedMemoryStreams hung once in 30 in the default mode when a cuBLAS
// call loaded a module while another thread unpatched one (Note [A
// module-loaded callback waits a bounded time]). Here loader threads load
// an NVRTC-compiled cubin again and again (each load a new module, patched
// when it loads), launch from it and unload it, while launcher threads
// launch from one long-lived module with a synchronize every 64 launches
// (where the default mode unpatches what no launch wants). Exits 1 when a
// buffer holds the wrong sum, 2 on a CUDA or NVRTC error.
#include <cuda.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "driver_check.h"

namespace {

constexpr int loaders = 4;
constexpr int loads_each = 25;
constexpr int launchers = 4;
constexpr int launches_each = 3000;
constexpr int elements = 4096;

const char* source = R"(
extern "C" __global__ void add_one(float* p, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] += 1.0f;
}
)";

std::vector<char> compile(CUdevice device) {
  int major = 0, minor = 0;
  CU_CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  CU_CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  nvrtcProgram program;
  NVRTC_CHECK(nvrtcCreateProgram(&program, source, "churn.cu", 0, nullptr, nullptr));
  const std::string arch = "--gpu-architecture=sm_" + std::to_string(major * 10 + minor);
  const char* options[] = {arch.c_str()};
  NVRTC_CHECK(nvrtcCompileProgram(program, 1, options));
  return take_cubin(program);
}

// Each thread works on a buffer and a stream of its own; returns whether the
// buffer ends holding `adds` in every element.
struct lane {
  CUstream stream = nullptr;
  CUdeviceptr buffer = 0;
  int n = elements;

  explicit lane(CUcontext context) {
    CU_CHECK(cuCtxSetCurrent(context));
    CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CU_CHECK(cuMemAlloc(&buffer, elements * sizeof(float)));
    CU_CHECK(cuMemsetD32Async(buffer, 0, elements, stream));
  }
  void add_one(CUfunction f) {
    void* args[] = {&buffer, &n};
    CU_CHECK(cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, stream, args, nullptr));
  }
  bool holds(int adds) {
    std::vector<float> host(elements);
    CU_CHECK(cuStreamSynchronize(stream));
    CU_CHECK(cuMemcpyDtoH(host.data(), buffer, elements * sizeof(float)));
    CU_CHECK(cuMemFree(buffer));
    CU_CHECK(cuStreamDestroy(stream));
    for (const float v : host) {
      if (v != static_cast<float>(adds)) return false;
    }
    return true;
  }
};

bool load_launch_unload(CUcontext context, const std::vector<char>& cubin) {
  lane l(context);
  for (int i = 0; i < loads_each; ++i) {
    CUmodule module;
    CU_CHECK(cuModuleLoadData(&module, cubin.data()));
    CUfunction f;
    CU_CHECK(cuModuleGetFunction(&f, module, "add_one"));
    l.add_one(f);
    CU_CHECK(cuStreamSynchronize(l.stream));  // its kernel ends before the unload
    CU_CHECK(cuModuleUnload(module));
  }
  return l.holds(loads_each);
}

bool launch_many(CUcontext context, CUfunction f) {
  lane l(context);
  for (int i = 1; i <= launches_each; ++i) {
    l.add_one(f);
    if (i % 64 == 0) CU_CHECK(cuStreamSynchronize(l.stream));
  }
  return l.holds(launches_each);
}

}  // namespace

int main() {
  CU_CHECK(cuInit(0));
  CUdevice device;
  CU_CHECK(cuDeviceGet(&device, 0));
  CUcontext context;
  CU_CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CU_CHECK(cuCtxSetCurrent(context));
  const std::vector<char> cubin = compile(device);
  CUmodule resident;
  CU_CHECK(cuModuleLoadData(&resident, cubin.data()));
  CUfunction add_one;
  CU_CHECK(cuModuleGetFunction(&add_one, resident, "add_one"));

  std::vector<char> ok(loaders + launchers, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < loaders; ++t) {
    threads.emplace_back([&, t] { ok[t] = load_launch_unload(context, cubin); });
  }
  for (int t = 0; t < launchers; ++t) {
    threads.emplace_back([&, t] { ok[loaders + t] = launch_many(context, add_one); });
  }
  for (auto& t : threads) t.join();
  CU_CHECK(cuModuleUnload(resident));
  CU_CHECK(cuDevicePrimaryCtxRelease(device));
  int wrong = 0;
  for (const char o : ok) wrong += o ? 0 : 1;
  std::printf("module_churn: %d loads and %d launches on %d threads, %d wrong buffers\n",
              loaders * loads_each, launchers * launches_each, loaders + launchers, wrong);
  return wrong == 0 ? 0 : 1;
}
