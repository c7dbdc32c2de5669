// The launch loop of source_bench.cpp, driven through the injection library
// itself: libstreamsan_inject.so dlopened as the CUDA driver opens it, over
// the fake Sanitizer API and fake driver of tests/inject.
//
//   env STREAMSAN_INJECTION_LIB=build/inject/libstreamsan_inject.so
//       STREAMSAN_SANITIZER_LIB=build/tests/inject/libfake_sanitizer_api.so
//       LD_LIBRARY_PATH=build/tests/inject
//       build/bench/injection/injection_library_bench [LAUNCHES]
//
// Note [The library as the driver loads it]
// source_bench.cpp links the source, the model and the recorder into its
// executable, where a thread_local is an offset from the thread pointer and
// a call between our components a direct call. In the library the driver
// dlopens, every thread_local use outside the one per function that the
// code arranges is a call to __tls_get_addr, and that is what the program's
// thread pays on the GPU machine. This program measures the library as
// shipped, with the session's defaults (stacks captured, its engine
// thread); `library-instructions.sh` next to it counts its instructions a
// launch under callgrind, deterministically (the engine inline). On
// 2026-11-30 that count went from 2,806 (77cf10c) to 2,192 for our
// callbacks without the engine, where source_bench showed half of the
// change: the thread_local lookups it cannot see.
//
// With LIBRARY_BENCH_STREAMS=1 every launch goes to the legacy default
// stream and no event hands over: a single-stream program, as most PyTorch
// training loops are, where no two pieces of work can overlap and each
// launch asks whether it may race the host instead (Note [First launches
// are measured once work can overlap] in inject/model/concurrency_watch.h).
// With LIBRARY_BENCH_CHAINS=2 the launches come in turn from two call
// chains of different depth, as a training step's operators launch from
// their own depths of the stack (Note [A memo per start] in
// inject/stack/fast_unwinder.cpp); the default, 1, launches from one.
#include <dlfcn.h>
#include <sanitizer.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/inject/driver_call_params.h"
#include "tests/inject/fake_cuda_driver.h"
#include "tests/inject/fake_sanitizer_api.h"
#include "tests/inject/fake_sanitizer_calls.h"

namespace {

using namespace streamsan::injection::driver_calls;
using namespace streamsan::injection::fake_calls;

const auto ctx = reinterpret_cast<CUcontext>(0xc0);
const auto module_a = reinterpret_cast<CUmodule>(0xa000);
const auto add = reinterpret_cast<CUfunction>(0xadd0);

void api(Sanitizer_CallbackId cbid, const char* name, const void* params) {
  deliver_api_call(SANITIZER_CB_DOMAIN_DRIVER_API, cbid, name, params, ctx);
}

// The two call chains of LIBRARY_BENCH_CHAINS=2: the same call, from two
// stack depths.
template <class F>
[[gnu::noinline]] void from_near(F& call) {
  call();
  asm volatile("" ::: "memory");
}
template <class F>
[[gnu::noinline]] void from_far(F& call) {
  volatile char pad[256];
  pad[0] = 1;
  call();
  asm volatile("" ::: "memory");
  if (pad[0] != 1) std::abort();
}

int fail(const std::string& why) {
  std::fprintf(stderr, "injection_library_bench: %s\n", why.c_str());
  return 1;
}

// The value of `variable`, 1 or 2 (`fallback` when unset); for any other,
// 0 once the error naming it is printed.
int one_or_two(const char* variable, int fallback) {
  const char* text = std::getenv(variable);
  if (text == nullptr) return fallback;
  const std::string value = text;
  if (value == "1" || value == "2") return value == "1" ? 1 : 2;
  fail(std::string(variable) + "=" + value + ": expected 1 or 2");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const long launches = argc > 1 ? std::atol(argv[1]) : 200000;
  const char* path = std::getenv("STREAMSAN_INJECTION_LIB");
  if (path == nullptr) return fail("set STREAMSAN_INJECTION_LIB to libstreamsan_inject.so");
  if (launches <= 0) return fail(std::string("launches must be positive: ") + argv[1]);
  const int stream_count = one_or_two("LIBRARY_BENCH_STREAMS", 2);
  const int chains = one_or_two("LIBRARY_BENCH_CHAINS", 1);
  if (stream_count == 0 || chains == 0) return 1;
  const bool one_stream = stream_count == 1;
  void* library = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return fail(std::string("loading ") + path + ": " + ::dlerror());
  const auto initialize = reinterpret_cast<int (*)()>(::dlsym(library, "InitializeInjection"));
  if (initialize == nullptr || initialize() != 1) {
    return fail(std::string(path) + ": InitializeInjection missing or failed");
  }

  fake_cuda_define_function(add, module_a, "_Z3addPfPKf");
  Sanitizer_ResourceModuleData m{};
  m.context = ctx;
  m.module = module_a;
  fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_RESOURCE, SANITIZER_CBID_RESOURCE_MODULE_LOADED, &m);
  CUstream streams[2] = {reinterpret_cast<CUstream>(0x5001), reinterpret_cast<CUstream>(0x5002)};
  for (CUstream& s : streams) {
    if (one_stream) {
      s = nullptr;  // the legacy default stream
      continue;
    }
    stream_create_params p{&s, CU_STREAM_NON_BLOCKING};
    api(SANITIZER_CBID_DRIVER_API_cuStreamCreate, "cuStreamCreate", &p);
  }
  CUevent handover = reinterpret_cast<CUevent>(0xe001);
  event_create_params ec{&handover, CU_EVENT_DISABLE_TIMING};
  api(SANITIZER_CBID_DRIVER_API_cuEventCreate, "cuEventCreate", &ec);
  // add(float* p, const float* q), p[i] += q[i]: 8 buffers of 1 KiB, as
  // bench/precise/launch_loop.cu.
  CUdeviceptr buffers[8];
  for (int b = 0; b < 8; ++b) {
    buffers[b] = 0x7e0000000000 + static_cast<CUdeviceptr>(b) * 4096;
    mem_alloc_params a{&buffers[b], 1024};
    api(SANITIZER_CBID_DRIVER_API_cuMemAlloc_v2, "cuMemAlloc_v2", &a);
  }

  CUdeviceptr p = 0, q = 0;
  void* args[2] = {&p, &q};
  int turn = 0;
  std::uintptr_t next_launch = 0x100;
  const auto launch = [&](long i, bool measured) {
    p = buffers[i % 8];
    q = buffers[(i + 1) % 8];
    launch_params l{};
    l.f = add;
    l.grid_x = l.block_x = 256;
    l.grid_y = l.grid_z = l.block_y = l.block_z = 1;
    l.hStream = streams[turn];
    l.kernelParams = args;
    // The first launches of a kernel on each stream are measured, which
    // needs the launch callbacks of their patched module; once those
    // launches are done the module is unpatched and launches take none
    // (Note [Launch callbacks only while patched]).
    deliver_api_call(SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuLaunchKernel,
                     "cuLaunchKernel", &l, ctx, [&] {
                       if (!measured) return;
                       deliver_launch_callbacks(launch_data(ctx, l.hStream, module_a, add,
                                                            "_Z3addPfPKf", next_launch++));
                     });
    if (!one_stream && (i + 1) % 16 == 0) {
      event_record_params r{handover, streams[turn]};
      api(SANITIZER_CBID_DRIVER_API_cuEventRecord, "cuEventRecord", &r);
      turn = 1 - turn;
      stream_wait_event_params w{streams[turn], handover, 0};
      api(SANITIZER_CBID_DRIVER_API_cuStreamWaitEvent, "cuStreamWaitEvent", &w);
    }
  };
  // The first launches on each stream are measured; the steady state after
  // them is what a long loop runs in.
  for (long i = 0; i < 64; ++i) launch(i, true);
  const auto start = std::chrono::steady_clock::now();
  for (long i = 64; i < 64 + launches; ++i) {
    auto call = [&] { launch(i, false); };
    if (chains == 2 && i % 2 == 1) {
      from_far(call);
    } else {
      from_near(call);
    }
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  std::printf("library_launch launches=%ld ns_per_launch=%.1f\n", launches, ns / launches);
  std::fflush(stdout);
  return 0;
}
