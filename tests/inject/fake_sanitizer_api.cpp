// A stand-in for libsanitizer-public.so (see fake_sanitizer_api.h).
#include "tests/inject/fake_sanitizer_api.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace {

struct state {
  std::mutex mutex;
  Sanitizer_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  std::map<Sanitizer_LaunchHandle, void*> launch_data;
  std::map<CUfunction, void*> function_data;
  std::set<CUmodule> patched;
  std::set<CUmodule> refused;
  std::map<Sanitizer_CallbackDomain, bool> domains;
  // Callbacks switched off one by one (sanitizerEnableCallback(0, ...)).
  std::set<std::pair<Sanitizer_CallbackDomain, Sanitizer_CallbackId>> switched_off;
  void (*module_change_hook)() = nullptr;
};
state& s() {
  static auto* st = new state;
  return *st;
}

}  // namespace

#define FAKE extern "C" __attribute__((visibility("default")))

FAKE SanitizerResult sanitizerSubscribe(Sanitizer_SubscriberHandle* h, Sanitizer_CallbackFunc cb,
                                        void* userdata) {
  s().callback = cb;
  s().userdata = userdata;
  *h = reinterpret_cast<Sanitizer_SubscriberHandle>(&s());
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerUnsubscribe(Sanitizer_SubscriberHandle) { return SANITIZER_SUCCESS; }
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
FAKE SanitizerResult sanitizerAddPatches(const void*, CUcontext) { return SANITIZER_SUCCESS; }
FAKE SanitizerResult sanitizerPatchInstructions(const Sanitizer_InstructionId, CUmodule module,
                                                const char*) {
  std::lock_guard lock(s().mutex);
  return s().refused.count(module) ? SANITIZER_ERROR_INVALID_PARAMETER : SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerPatchModule(CUmodule module) {
  if (s().module_change_hook != nullptr) s().module_change_hook();
  std::lock_guard lock(s().mutex);
  s().patched.insert(module);
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerUnpatchModule(CUmodule module) {
  if (s().module_change_hook != nullptr) s().module_change_hook();
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
  return *p ? SANITIZER_SUCCESS : SANITIZER_ERROR_OUT_OF_MEMORY;
}
FAKE SanitizerResult sanitizerFree(CUcontext, void* p) {
  std::free(p);
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerMemset(void* p, int value, size_t n, Sanitizer_StreamHandle) {
  std::memset(p, value, n);
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerMemcpyHostToDeviceAsync(void* dst, void* src, size_t n,
                                                      Sanitizer_StreamHandle) {
  std::memcpy(dst, src, n);
  return SANITIZER_SUCCESS;
}
FAKE SanitizerResult sanitizerMemcpyDeviceToHost(void* dst, void* src, size_t n,
                                                 Sanitizer_StreamHandle) {
  std::memcpy(dst, src, n);
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
  s().module_change_hook = nullptr;
}
FAKE void fake_sanitizer_on_module_change(void (*hook)()) { s().module_change_hook = hook; }
FAKE bool fake_sanitizer_callback_switched_off(Sanitizer_CallbackDomain domain,
                                               Sanitizer_CallbackId cbid) {
  std::lock_guard lock(s().mutex);
  return s().switched_off.count({domain, cbid}) != 0;
}
