// The floor reference of the capture-overhead issue: a CUPTI subscriber to
// the runtime and driver API domains that only counts its callbacks. What
// `streamsan run` costs above this is streamsan's own work.
//
// BARE_CUPTI_ONLY narrows the subscription, to price one callback inside the
// driver: "launch" enables only the runtime's (__)cudaLaunchKernel and the
// driver's cuLaunchKernel (what one launch of launch_loop passes through),
// "driver_launch" only cuLaunchKernel. Unset: both domains whole.
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

std::atomic<unsigned long long> callbacks{0};

void CUPTIAPI count(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {
  callbacks.fetch_add(1, std::memory_order_relaxed);
}

void report() { std::fprintf(stderr, "bare_cupti: callbacks=%llu\n", callbacks.load()); }

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  CUpti_SubscriberHandle subscriber;
  const char* only = std::getenv("BARE_CUPTI_ONLY");
  bool ok = cuptiSubscribe(&subscriber, count, nullptr) == CUPTI_SUCCESS;
  if (only == nullptr || *only == '\0') {
    ok = ok && cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS &&
         cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS;
  } else {
    const bool runtime_too = std::strcmp(only, "launch") == 0;
    if (!runtime_too && std::strcmp(only, "driver_launch") != 0) {
      std::fprintf(stderr, "bare_cupti: BARE_CUPTI_ONLY=%s: expected launch or driver_launch\n", only);
      return 0;
    }
    ok = ok && cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                                   CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) == CUPTI_SUCCESS;
    if (runtime_too) {
      // <<<>>> goes through __cudaLaunchKernel since CUDA 13.
      ok = ok &&
           cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                               CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) == CUPTI_SUCCESS &&
           cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                               CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000) == CUPTI_SUCCESS;
    }
  }
  if (!ok) {
    std::fprintf(stderr, "bare_cupti: cannot subscribe\n");
    return 0;
  }
  std::atexit(report);
  return 1;
}
