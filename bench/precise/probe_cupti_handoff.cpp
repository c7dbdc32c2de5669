// PROBE_HANDOFF for probe_inject.cpp: CUPTI takes the program's calls first,
// then hands over to the Compute Sanitizer API in the same process. The two
// exclude each other while both are subscribed (with CUPTI subscribed first
// no Sanitizer API callback arrives); this asks whether CUPTI's documented
// dynamic detach (cuptiFinalize in an API exit callback) lifts that, so that
// a run could start on the cheaper subscriber and move to the one that can
// patch kernels when a measurement is first needed. Its own translation unit:
// cupti.h and sanitizer.h clash in one. CUPTI is opened here, not linked:
// the probe's other modes (the bare Sanitizer API floor) must not load it.
#include <cupti.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <string>

namespace {

struct cupti_functions {
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiEnableDomain) enable_domain = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiFinalize) finalize = nullptr;
};

// libcupti.so.13 from the loader's paths, else from cupti/ next to this
// library (where stage-probe.sh puts it).
bool open_cupti(cupti_functions& f) {
  void* h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr) {
    Dl_info self{};
    if (dladdr(reinterpret_cast<void*>(&open_cupti), &self) != 0 && self.dli_fname != nullptr) {
      std::string dir = self.dli_fname;
      dir.resize(dir.rfind('/') + 1);
      h = dlopen((dir + "cupti/libcupti.so.13").c_str(), RTLD_NOW | RTLD_GLOBAL);
    }
  }
  if (h == nullptr) {
    std::fprintf(stderr, "probe: cannot open libcupti.so.13: %s\n", dlerror());
    return false;
  }
  f.subscribe = reinterpret_cast<decltype(f.subscribe)>(dlsym(h, "cuptiSubscribe"));
  f.enable_domain = reinterpret_cast<decltype(f.enable_domain)>(dlsym(h, "cuptiEnableDomain"));
  f.enable_callback =
      reinterpret_cast<decltype(f.enable_callback)>(dlsym(h, "cuptiEnableCallback"));
  f.unsubscribe = reinterpret_cast<decltype(f.unsubscribe)>(dlsym(h, "cuptiUnsubscribe"));
  f.finalize = reinterpret_cast<decltype(f.finalize)>(dlsym(h, "cuptiFinalize"));
  return f.subscribe && f.enable_domain && f.enable_callback && f.unsubscribe && f.finalize;
}

struct handoff {
  cupti_functions cupti;
  CUpti_SubscriberHandle subscriber = nullptr;
  unsigned long long after = 0;  // driver launches before the handoff
  void (*then)() = nullptr;      // subscribes the Sanitizer API
  std::atomic<unsigned long long> callbacks{0};
  std::atomic<unsigned long long> launches{0};
  std::atomic<bool> done{false};
  CUptiResult unsubscribed = CUPTI_SUCCESS;
  CUptiResult finalized = CUPTI_SUCCESS;
};

handoff& the_handoff() {
  static handoff h;
  return h;
}

void CUPTIAPI on_handoff_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                          const void* data) {
  auto& h = the_handoff();
  if (h.done.load(std::memory_order_acquire)) return;
  h.callbacks.fetch_add(1, std::memory_order_relaxed);
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
      info->callbackSite != CUPTI_API_EXIT) {
    return;
  }
  if (h.launches.fetch_add(1, std::memory_order_relaxed) + 1 != h.after) return;
  // The documented dynamic detach: in an API exit callback.
  h.done.store(true, std::memory_order_release);
  h.unsubscribed = h.cupti.unsubscribe(h.subscriber);
  h.finalized = h.cupti.finalize();
  std::fprintf(stderr, "probe: CUPTI detached after %llu launches (unsubscribe %d, finalize %d)\n",
               h.launches.load(), static_cast<int>(h.unsubscribed),
               static_cast<int>(h.finalized));
  h.then();
}

}  // namespace

// Subscribes CUPTI to the runtime and driver domains; after `after` driver
// launches it detaches and calls `then` on the launching thread.
bool probe_cupti_first(unsigned long long after, void (*then)()) {
  auto& h = the_handoff();
  h.after = after;
  h.then = then;
  return open_cupti(h.cupti) &&
         h.cupti.subscribe(&h.subscriber, on_handoff_callback, nullptr) == CUPTI_SUCCESS &&
         h.cupti.enable_domain(1, h.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) == CUPTI_SUCCESS &&
         h.cupti.enable_domain(1, h.subscriber, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS;
}

unsigned long long probe_cupti_callbacks() { return the_handoff().callbacks.load(); }

namespace {

void CUPTIAPI on_counted_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {
  the_handoff().callbacks.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

// PROBE_RELEASE_TO=cupti: after the Sanitizer API let go, CUPTI takes the
// driver calls streamsan keeps in a launch loop (the probe's api-launch set),
// counting. Returns the first failing CUptiResult, or 0.
int probe_cupti_launches_only() {
  auto& h = the_handoff();
  if (!open_cupti(h.cupti)) return -1;
  const auto subscribed = h.cupti.subscribe(&h.subscriber, on_counted_callback, nullptr);
  if (subscribed != CUPTI_SUCCESS) return static_cast<int>(subscribed);
  for (const auto cbid : {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
                          CUPTI_DRIVER_TRACE_CBID_cuEventRecord,
                          CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz,
                          CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent,
                          CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent_ptsz}) {
    if (const auto r = h.cupti.enable_callback(1, h.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
        r != CUPTI_SUCCESS) {
      return static_cast<int>(r);
    }
  }
  return 0;
}
