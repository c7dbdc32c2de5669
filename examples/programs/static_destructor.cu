// CUDA calls from static destructors (issue #16). A program's static that
// owns device memory frees it when the program exits. glibc runs the static
// destructors after it destroyed the main thread's thread_locals, so
// streamsan captures their stacks then (this once crashed the program).
//
// `pool` is made after the program's first CUDA call (a function-local
// static, as resource pools and singletons usually are): its destructor runs
// before streamsan's report, so what it does is checked. Its destructor
// hands work from one stream to another; the racy version forgets the event
// between them (S-STREAM-2), and the race is reported from the destructor's
// stack. `early` is made before any CUDA call: its destructor runs after the
// report and after the CUDA runtime began its teardown (its cudaFree may
// fail, as in real programs, which ignore that), and must not crash either.
#include "example_common.h"

namespace {

constexpr int n = 1 << 16;

struct device_pool {
  float* a = nullptr;
  float* sum = nullptr;
  cudaStream_t s1{}, s2{};

  device_pool() {
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreate(&s2));
    CHECK(cudaMalloc(&a, n * sizeof(float)));
    CHECK(cudaMalloc(&sum, sizeof(float)));
    CHECK(cudaMemset(sum, 0, sizeof(float)));
    CHECK(cudaDeviceSynchronize());
  }

  ~device_pool() {
    fill<<<64, 256, 0, s1>>>(a, n, 1.0f, 1000000);
#if STREAMSAN_FIXED
    cudaEvent_t filled;
    CHECK(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
    CHECK(cudaEventRecord(filled, s1));
    CHECK(cudaStreamWaitEvent(s2, filled, 0));
#endif
    sum_into<<<1, 256, 0, s2>>>(a, n, sum, 0);
    float host = 0;
    CHECK(cudaMemcpyAsync(&host, sum, sizeof(float), cudaMemcpyDeviceToHost, s2));
    CHECK(cudaStreamSynchronize(s2));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(a));
    CHECK(cudaFree(sum));
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaStreamDestroy(s2));
    // exit() is running: a wrong result ends the process at once.
    if (report_result("sum in a static destructor", host, n) != 0) std::_Exit(1);
  }
};

device_pool& pool() {
  static device_pool p;
  return p;
}

struct early_buffer {
  float* p = nullptr;
  ~early_buffer() {
    if (p != nullptr) cudaFree(p);  // may fail: the runtime is tearing down
  }
} early;

}  // namespace

int main() {
  CHECK(cudaMalloc(&early.p, 1024));  // the first CUDA call
  pool();
  std::printf("main returns; the static destructors do the rest\n");
  return 0;
}
