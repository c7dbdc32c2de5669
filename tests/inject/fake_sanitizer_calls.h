// Callbacks that tests and benchmarks deliver through the fake Compute
// Sanitizer API (fake_sanitizer_api.h) the way the driver delivers them:
// an API call's entry and exit, and a kernel's launch callbacks.
#pragma once

#include <cuda.h>
#include <sanitizer.h>

#include <cstdint>

#include "tests/inject/fake_sanitizer_api.h"

namespace streamsan::injection::fake_calls {

// The entry of one API call in context `ctx`, then `inside` (the driver's
// own work between the two: a patched kernel's launch callbacks, a module
// load's), then its exit with CUDA_SUCCESS.
template <class Inside>
void deliver_api_call(Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const char* name,
                      const void* params, CUcontext ctx, Inside&& inside) {
  Sanitizer_CallbackData d{};
  d.callbackSite = SANITIZER_API_ENTER;
  d.functionName = name;
  d.functionParams = params;
  d.context = ctx;
  fake_sanitizer_deliver(domain, cbid, &d);
  inside();
  const CUresult ok = CUDA_SUCCESS;
  d.callbackSite = SANITIZER_API_EXIT;
  d.functionReturnValue = &ok;
  fake_sanitizer_deliver(domain, cbid, &d);
}

inline void deliver_api_call(Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid,
                             const char* name, const void* params, CUcontext ctx) {
  deliver_api_call(domain, cbid, name, params, ctx, [] {});
}

// What the driver gives the launch callbacks of launch `launch` (a handle
// the caller makes unique) of `function` on `stream`.
inline Sanitizer_LaunchData launch_data(CUcontext ctx, CUstream stream, CUmodule module,
                                        CUfunction function, const char* name,
                                        std::uintptr_t launch) {
  Sanitizer_LaunchData l{};
  l.context = ctx;
  l.stream = stream;
  l.hStream = reinterpret_cast<Sanitizer_StreamHandle>(stream);
  l.module = module;
  l.function = function;
  l.functionName = name;
  l.hLaunch = reinterpret_cast<Sanitizer_LaunchHandle>(launch);
  return l;
}

// A launch's two callbacks, with nothing run between them.
inline void deliver_launch_callbacks(const Sanitizer_LaunchData& l) {
  fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_LAUNCH, SANITIZER_CBID_LAUNCH_BEGIN, &l);
  fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_LAUNCH, SANITIZER_CBID_LAUNCH_END, &l);
}

}  // namespace streamsan::injection::fake_calls
