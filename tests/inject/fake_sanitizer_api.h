// Test control of the fake Compute Sanitizer API library
// (fake_sanitizer_api.cpp, built as a shared library that the source under
// test dlopens through STREAMSAN_SANITIZER_LIB): device memory is host
// memory, callbacks are delivered by the test.
#pragma once

#include <sanitizer.h>

#include <set>
#include <string>

extern "C" {
// Delivers one callback to the subscriber.
void fake_sanitizer_deliver(Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid,
                            const void* data);
// The userdata the source gave launch `launch` (nullptr when none or null).
void* fake_sanitizer_userdata(Sanitizer_LaunchHandle launch);
bool fake_sanitizer_userdata_set(Sanitizer_LaunchHandle launch);
// The per-function userdata (sanitizerSetCallbackData) of `function` now.
void* fake_sanitizer_function_data(CUfunction function);
// Whether the source ever set it (a patched graph node without per-launch
// data, whose function's data was never set, reads a wild pointer: H200,
// 2026-11-28).
bool fake_sanitizer_function_data_set(CUfunction function);
bool fake_sanitizer_is_patched(CUmodule module);
// Patching `module` fails from now on.
void fake_sanitizer_refuse_module(CUmodule module);
bool fake_sanitizer_domain_enabled(Sanitizer_CallbackDomain domain);
// Whether a subscriber is there (sanitizerSubscribe called, and
// sanitizerUnsubscribe not since).
bool fake_sanitizer_subscribed();
// Whether the source switched this callback off (sanitizerEnableCallback 0).
bool fake_sanitizer_callback_switched_off(Sanitizer_CallbackDomain domain,
                                          Sanitizer_CallbackId cbid);
void fake_sanitizer_reset();
// sanitizerMemcpyDeviceToHost calls since the reset, and of them those into
// memory the fake driver has registered (fake_cuda_host_registered).
int fake_sanitizer_copies_to_host();
int fake_sanitizer_copies_to_pinned_host();
// sanitizerAddPatches calls for `ctx`.
int fake_sanitizer_patches_added(CUcontext ctx);
// The stream the last sanitizerMemcpyDeviceToHost was made on.
Sanitizer_StreamHandle fake_sanitizer_last_copy_stream();
// Called at the start of every sanitizerPatchModule and
// sanitizerUnpatchModule until the next reset (a stand-in for the driver's
// lock, which both take).
void fake_sanitizer_on_module_change(void (*hook)());
// Note [A driver lock in the fake] (fake_sanitizer_api.cpp): patching and
// unpatching take the fake driver's lock, and module callbacks delivered
// with fake_sanitizer_deliver_under_driver_lock run under it.
void fake_sanitizer_use_driver_lock(bool on);
void fake_sanitizer_deliver_under_driver_lock(Sanitizer_CallbackDomain domain,
                                              Sanitizer_CallbackId cbid, const void* data);
// Module events so delivered that began while another thread's patch or
// unpatch was under way.
int fake_sanitizer_module_events_during_changes();
}
