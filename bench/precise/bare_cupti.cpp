// The floor reference of the capture-overhead issue: a CUPTI subscriber to
// the runtime and driver API domains that only counts its callbacks. What
// `streamsan run` costs above this is streamsan's own work.
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

std::atomic<unsigned long long> callbacks{0};

void CUPTIAPI count(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {
  callbacks.fetch_add(1, std::memory_order_relaxed);
}

void report() { std::fprintf(stderr, "bare_cupti: callbacks=%llu\n", callbacks.load()); }

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  CUpti_SubscriberHandle subscriber;
  if (cuptiSubscribe(&subscriber, count, nullptr) != CUPTI_SUCCESS ||
      cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) != CUPTI_SUCCESS ||
      cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "bare_cupti: cannot subscribe\n");
    return 0;
  }
  std::atexit(report);
  return 1;
}
