// A stand-in for libsanitizer-public.so (see fake_sanitizer_api.h).
#include "tests/inject/fake_sanitizer_api.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <thread>

namespace {

struct state {
  std::mutex mutex;
  Sanitizer_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  std::map<Sanitizer_LaunchHandle, void*> launch_data;
  std::map<CUfunction, void*> function_data;
  std::map<CUcontext, int> patches_added;  // sanitizerAddPatches calls
  std::set<CUmodule> patched;
  std::set<CUmodule> refused;
  std::map<Sanitizer_CallbackDomain, bool> domains;
  // Callbacks switched off one by one (sanitizerEnableCallback(0, ...)).
  std::set<std::pair<Sanitizer_CallbackDomain, Sanitizer_CallbackId>> switched_off;
  void (*module_change_hook)() = nullptr;
  // Note [A driver lock in the fake]
  std::atomic<bool> driver_lock_on{false};
  std::recursive_mutex driver_lock;
  // Patches and unpatches called and not returned, and module events that
  // began while one was (Note [No module change while a module loads]).
  std::atomic<int> changes_in_progress{0};
  std::atomic<int> module_events_during_changes{0};
  // Device-to-host copies, and those into memory the fake driver has
  // registered (Note [Read-backs land in page-locked memory]).
  std::atomic<int> copies_to_host{0};
  std::atomic<int> copies_to_pinned_host{0};
  std::atomic<Sanitizer_StreamHandle> last_copy_stream{nullptr};
  // Device memory handed out and not freed. A table the tracker drops
  // with its destroyed context (Note [What a destroyed context took with
  // it]) stays here, as the driver would have taken it back.
  std::mutex allocations_mutex;
  std::set<void*> allocations;
};

state& s() {
  static auto* st = new state;
  return *st;
}

// Note [A driver lock in the fake]
// The real driver runs its module-loaded and module-unload callbacks under
// a lock of its own, and sanitizerPatchModule and sanitizerUnpatchModule
// take that lock (H200, 2026-11-29: a patch lock of ours held across an
// unpatch deadlocked with a module-loaded callback that waited for it).
// With fake_sanitizer_use_driver_lock(true) the fake does the same, so
// that a test with threads meets the same lock order as on a GPU, and
// ThreadSanitizer reports an inversion even when no run deadlocks. It is
// recursive, as the driver's is to a thread inside a callback that calls
// into the Sanitizer API. A module event that begins while a patch or
// unpatch is under way (called, not returned: on a GPU it waits for the
// driver's lock meanwhile, and crashed once let go) is counted.
struct driver_locked {
  std::unique_lock<std::recursive_mutex> lock;
  driver_locked() {
    if (s().driver_lock_on.load()) lock = std::unique_lock(s().driver_lock);
  }
};
struct module_change {
  module_change() { s().changes_in_progress.fetch_add(1); }
  ~module_change() { s().changes_in_progress.fetch_sub(1); }
};

}  // namespace

#define FAKE extern "C" __attribute__((visibility("default")))

FAKE SanitizerResult sanitizerSubscribe(Sanitizer_SubscriberHandle* h, Sanitizer_CallbackFunc cb,
                                        void* userdata) {
  s().callback = cb;
  s().userdata = userdata;
  *h = reinterpret_cast<Sanitizer_SubscriberHandle>(&s());
  return SANITIZER_SUCCESS;
}
// As the real one: the subscriber's callback and what it enabled are
// forgotten (a later subscriber starts with nothing enabled).
FAKE SanitizerResult sanitizerUnsubscribe(Sanitizer_SubscriberHandle) {
  std::lock_guard lock(s().mutex);
  s().callback = nullptr;
  s().userdata = nullptr;
  s().domains.clear();
  s().switched_off.clear();
  return SANITIZER_SUCCESS;
}
FAKE bool fake_sanitizer_subscribed() {
  std::lock_guard lock(s().mutex);
  return s().callback != nullptr;
}
FAKE SanitizerResult sanitizerEnableDomain(uint32_t enable, Sanitizer_SubscriberHandle,
                                           Sanitizer_CallbackDomain domain) {
  std::lock_guard lock(s().mutex);
  s().domains[domain] = enable != 0;
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerEnableCallback(uint32_t enable, Sanitizer_SubscriberHandle,
                                             Sanitizer_CallbackDomain domain,
                                             Sanitizer_CallbackId cbid) {
  std::lock_guard lock(s().mutex);
  if (enable != 0) {
    s().switched_off.erase({domain, cbid});
  } else {
    s().switched_off.insert({domain, cbid});
  }
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerGetResultString(SanitizerResult, const char** text) {
  *text = "SANITIZER_ERROR_INVALID_PARAMETER (fake)";
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerAddPatches(const void*, CUcontext ctx) {
  const driver_locked driver;
  std::lock_guard lock(s().mutex);
  ++s().patches_added[ctx];
  return SANITIZER_SUCCESS;
}
FAKE int fake_sanitizer_patches_added(CUcontext ctx) {
  std::lock_guard lock(s().mutex);
  return s().patches_added[ctx];
}
FAKE SanitizerResult sanitizerPatchInstructions(const Sanitizer_InstructionId, CUmodule module,
                                                const char*) {
  const driver_locked driver;
  std::lock_guard lock(s().mutex);
  return s().refused.count(module) ? SANITIZER_ERROR_INVALID_PARAMETER : SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerPatchModule(CUmodule module) {
  const module_change change;
  if (s().module_change_hook != nullptr) s().module_change_hook();
  const driver_locked driver;
  std::lock_guard lock(s().mutex);
  s().patched.insert(module);
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerUnpatchModule(CUmodule module) {
  const module_change change;
  if (s().module_change_hook != nullptr) s().module_change_hook();
  const driver_locked driver;
  std::lock_guard lock(s().mutex);
  s().patched.erase(module);
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerSetLaunchCallbackData(Sanitizer_LaunchHandle launch, CUfunction,
                                                    Sanitizer_StreamHandle, const void* userdata) {
  std::lock_guard lock(s().mutex);
  s().launch_data[launch] = const_cast<void*>(userdata);
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerSetCallbackData(CUfunction function, const void* userdata) {
  std::lock_guard lock(s().mutex);
  s().function_data[function] = const_cast<void*>(userdata);
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerAlloc(CUcontext, void** p, size_t size) {
  *p = std::aligned_alloc(256, (size + 255) / 256 * 256);
  if (*p == nullptr) return SANITIZER_ERROR_OUT_OF_MEMORY;
  std::lock_guard lock(s().allocations_mutex);
  s().allocations.insert(*p);
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerFree(CUcontext, void* p) {
  {
    std::lock_guard lock(s().allocations_mutex);
    s().allocations.erase(p);
  }
  std::free(p);
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerMemset(void* p, int value, size_t n, Sanitizer_StreamHandle) {
  std::memset(p, value, n);
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerMemcpyHostToDeviceAsync(void* dst, void* src, size_t n,
                                                      Sanitizer_StreamHandle) {
  // The fake driver's, when it is loaded (tests/inject/fake_cuda_driver.h).
  using registered_fn = bool (*)(const void*, size_t);
  static const auto registered =
      reinterpret_cast<registered_fn>(dlsym(RTLD_DEFAULT, "fake_cuda_host_registered"));
  std::memcpy(dst, src, n);
  s().copies_to_host.fetch_add(1);
  if (registered != nullptr && registered(dst, n)) s().copies_to_pinned_host.fetch_add(1);
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerMemcpyDeviceToHost(void* dst, void* src, size_t n,
                                                 Sanitizer_StreamHandle stream) {
  s().last_copy_stream.store(stream);
  // The fake driver's, when it is loaded (tests/inject/fake_cuda_driver.h).
  using registered_fn = bool (*)(const void*, size_t);
  static const auto registered =
      reinterpret_cast<registered_fn>(dlsym(RTLD_DEFAULT, "fake_cuda_host_registered"));
  std::memcpy(dst, src, n);
  s().copies_to_host.fetch_add(1);
  if (registered != nullptr && registered(dst, n)) s().copies_to_pinned_host.fetch_add(1);
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerStreamSynchronize(Sanitizer_StreamHandle) { return SANITIZER_SUCCESS; }
FAKE SanitizerResult sanitizerGetStreamHandle(CUcontext, CUstream stream,
                                              Sanitizer_StreamHandle* h) {
  *h = reinterpret_cast<Sanitizer_StreamHandle>(stream);
  return SANITIZER_SUCCESS;
}

FAKE void fake_sanitizer_deliver(Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid,
                                 const void* data) {
  if (s().callback == nullptr) return;  // unsubscribed: nobody to call
  s().callback(s().userdata, domain, cbid, data);
}
FAKE void* fake_sanitizer_userdata(Sanitizer_LaunchHandle launch) {
  std::lock_guard lock(s().mutex);
  const auto it = s().launch_data.find(launch);
  return it == s().launch_data.end() ? nullptr : it->second;
}
FAKE bool fake_sanitizer_userdata_set(Sanitizer_LaunchHandle launch) {
  std::lock_guard lock(s().mutex);
  return s().launch_data.count(launch) != 0;
}
FAKE void* fake_sanitizer_function_data(CUfunction function) {
  std::lock_guard lock(s().mutex);
  const auto it = s().function_data.find(function);
  return it == s().function_data.end() ? nullptr : it->second;
}
FAKE bool fake_sanitizer_function_data_set(CUfunction function) {
  std::lock_guard lock(s().mutex);
  return s().function_data.count(function) != 0;
}
FAKE bool fake_sanitizer_is_patched(CUmodule module) {
  std::lock_guard lock(s().mutex);
  return s().patched.count(module) != 0;
}
FAKE void fake_sanitizer_refuse_module(CUmodule module) {
  std::lock_guard lock(s().mutex);
  s().refused.insert(module);
}
FAKE bool fake_sanitizer_domain_enabled(Sanitizer_CallbackDomain domain) {
  std::lock_guard lock(s().mutex);
  return s().domains[domain];
}
FAKE void fake_sanitizer_reset() {
  std::lock_guard lock(s().mutex);
  s().launch_data.clear();
  s().function_data.clear();
  s().patched.clear();
  s().refused.clear();
  s().switched_off.clear();
  s().domains.clear();
  s().module_change_hook = nullptr;
  s().driver_lock_on.store(false);
  s().module_events_during_changes.store(0);
  s().copies_to_host.store(0);
  s().copies_to_pinned_host.store(0);
}
FAKE int fake_sanitizer_copies_to_host() { return s().copies_to_host.load(); }
FAKE int fake_sanitizer_copies_to_pinned_host() { return s().copies_to_pinned_host.load(); }
FAKE Sanitizer_StreamHandle fake_sanitizer_last_copy_stream() {
  return s().last_copy_stream.load();
}
FAKE void fake_sanitizer_on_module_change(void (*hook)()) { s().module_change_hook = hook; }
FAKE void fake_sanitizer_use_driver_lock(bool on) { s().driver_lock_on.store(on); }
FAKE void fake_sanitizer_deliver_under_driver_lock(Sanitizer_CallbackDomain domain,
                                                  Sanitizer_CallbackId cbid, const void* data) {
  const driver_locked driver;
  // A module takes the driver a while to load: the window in which another
  // thread's change can come.
  std::this_thread::sleep_for(std::chrono::microseconds(50));
  if (s().changes_in_progress.load() > 0) s().module_events_during_changes.fetch_add(1);
  if (s().callback == nullptr) return;  // unsubscribed, as in fake_sanitizer_deliver
  s().callback(s().userdata, domain, cbid, data);
}
FAKE int fake_sanitizer_module_events_during_changes() {
  return s().module_events_during_changes.load();
}
FAKE bool fake_sanitizer_callback_switched_off(Sanitizer_CallbackDomain domain,
                                               Sanitizer_CallbackId cbid) {
  std::lock_guard lock(s().mutex);
  return s().switched_off.count({domain, cbid}) != 0;
}
