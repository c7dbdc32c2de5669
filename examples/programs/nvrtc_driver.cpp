// A kernel compiled at run time with NVRTC and launched through the driver
// API (cuModuleLoadData + cuLaunchKernel, no CUDA runtime at all): streamsan
// models the driver calls and reads the parameter layout and the types
// (from the lowered, mangled name) of the CUfunction. The producer and the
// consumer run on two non-blocking streams; the fix puts an event between.
#include <cuda.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "driver_check.h"

#ifndef STREAMSAN_FIXED
#define STREAMSAN_FIXED 0
#endif

namespace {

const char* source = R"(
__device__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {}
}
__global__ void produce(float* out, int n, long long cycles) {
  spin(cycles);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = 1.0f;
}
__global__ void consume(const float* in, float* sum, int n) {
  float s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += in[i];
  atomicAdd(sum, s);
}
)";

std::vector<char> compile(int major, int minor, std::string& produce_name,
                          std::string& consume_name) {
  nvrtcProgram program;
  NVRTC_CHECK(nvrtcCreateProgram(&program, source, "streams.cu", 0, nullptr, nullptr));
  NVRTC_CHECK(nvrtcAddNameExpression(program, "produce"));
  NVRTC_CHECK(nvrtcAddNameExpression(program, "consume"));
  const std::string arch = "--gpu-architecture=sm_" + std::to_string(major * 10 + minor);
  const char* options[] = {arch.c_str()};
  if (nvrtcCompileProgram(program, 1, options) != NVRTC_SUCCESS) {
    std::size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, log.data());
    std::fprintf(stderr, "NVRTC failed:\n%s\n", log.c_str());
    std::exit(2);
  }
  const char* lowered = nullptr;
  NVRTC_CHECK(nvrtcGetLoweredName(program, "produce", &lowered));
  produce_name = lowered;
  NVRTC_CHECK(nvrtcGetLoweredName(program, "consume", &lowered));
  consume_name = lowered;
  return take_cubin(program);
}

}  // namespace

int main() {
  CU_CHECK(cuInit(0));
  CUdevice device;
  CU_CHECK(cuDeviceGet(&device, 0));
  int major = 0, minor = 0;
  CU_CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  CU_CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  CUcontext context;
  CU_CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CU_CHECK(cuCtxSetCurrent(context));

  std::string produce_name, consume_name;
  const auto cubin = compile(major, minor, produce_name, consume_name);
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, cubin.data()));
  CUfunction produce, consume;
  CU_CHECK(cuModuleGetFunction(&produce, module, produce_name.c_str()));
  CU_CHECK(cuModuleGetFunction(&consume, module, consume_name.c_str()));

  int n = 1 << 16;
  CUdeviceptr a, sum;
  CU_CHECK(cuMemAlloc(&a, n * sizeof(float)));
  CU_CHECK(cuMemAlloc(&sum, sizeof(float)));
  CU_CHECK(cuMemsetD32(sum, 0, 1));
  CUstream s1, s2;
  CU_CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CU_CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CU_CHECK(cuCtxSynchronize());

  long long cycles = 1000000;
  void* produce_args[] = {&a, &n, &cycles};
  CU_CHECK(cuLaunchKernel(produce, 64, 1, 1, 256, 1, 1, 0, s1, produce_args, nullptr));
#if STREAMSAN_FIXED
  CUevent produced;
  CU_CHECK(cuEventCreate(&produced, CU_EVENT_DISABLE_TIMING));
  CU_CHECK(cuEventRecord(produced, s1));
  CU_CHECK(cuStreamWaitEvent(s2, produced, 0));
#endif
  void* consume_args[] = {&a, &sum, &n};
  CU_CHECK(cuLaunchKernel(consume, 1, 1, 1, 256, 1, 1, 0, s2, consume_args, nullptr));

  CU_CHECK(cuCtxSynchronize());
  float host = 0;
  CU_CHECK(cuMemcpyDtoH(&host, sum, sizeof host));
  std::printf("sum = %.0f (expected %d)\n", host, n);
  CU_CHECK(cuMemFree(a));
  CU_CHECK(cuMemFree(sum));
  CU_CHECK(cuModuleUnload(module));
  CU_CHECK(cuDevicePrimaryCtxRelease(device));
  return 0;
}
