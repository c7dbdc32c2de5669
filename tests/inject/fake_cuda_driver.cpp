// A stand-in for the CUDA driver's entry points the Sanitizer API source
// calls itself (see fake_cuda_driver.h).
#include "tests/inject/fake_cuda_driver.h"

#include <map>
#include <mutex>
#include <set>
#include <utility>

namespace {

struct event_state {
  bool complete = true;
};
struct state {
  std::mutex mutex;
  bool hold = false;
  std::map<CUevent, event_state> events;
  std::map<CUfunction, std::pair<CUmodule, std::string>> functions;
  std::set<CUstream> capturing;
  std::set<CUstream> busy;
  int stream_queries = 0;
  void (*lookup_hook)(void*) = nullptr;  // once, at the next kernel lookup
  void* lookup_arg = nullptr;
  std::uintptr_t next = 0x1000;
};
state& s() {
  static auto* st = new state;
  return *st;
}

void set_member(std::set<CUstream>& set, CUstream stream, bool member) {
  std::lock_guard lock(s().mutex);
  if (member) {
    set.insert(stream);
  } else {
    set.erase(stream);
  }
}

}  // namespace

#define FAKE extern "C" __attribute__((visibility("default")))

FAKE CUresult cuEventCreate(CUevent* e, unsigned int) {
  std::lock_guard lock(s().mutex);
  *e = reinterpret_cast<CUevent>(s().next += 16);
  s().events[*e] = {};
  return CUDA_SUCCESS;
}
FAKE CUresult cuEventRecord(CUevent e, CUstream) {
  std::lock_guard lock(s().mutex);
  s().events[e].complete = !s().hold;
  return CUDA_SUCCESS;
}
FAKE CUresult cuEventQuery(CUevent e) {
  std::lock_guard lock(s().mutex);
  return s().events[e].complete ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
FAKE CUresult cuEventSynchronize(CUevent e) {
  std::lock_guard lock(s().mutex);
  s().events[e].complete = true;  // the wait ends once the work has run
  return CUDA_SUCCESS;
}
FAKE CUresult cuEventDestroy_v2(CUevent) { return CUDA_SUCCESS; }
FAKE CUresult cuStreamCreate(CUstream* stream, unsigned int) {
  std::lock_guard lock(s().mutex);
  *stream = reinterpret_cast<CUstream>(s().next += 16);
  return CUDA_SUCCESS;
}
FAKE CUresult cuCtxPushCurrent_v2(CUcontext) { return CUDA_SUCCESS; }
FAKE CUresult cuCtxPopCurrent_v2(CUcontext* c) {
  *c = nullptr;
  return CUDA_SUCCESS;
}
FAKE CUresult cuCtxGetCurrent(CUcontext* c) {
  *c = reinterpret_cast<CUcontext>(0xc0);
  return CUDA_SUCCESS;
}
// Every handle the tests launch is a CUfunction.
FAKE CUresult cuKernelGetFunction(CUfunction*, CUkernel) {
  void (*hook)(void*) = nullptr;
  void* arg = nullptr;
  {
    std::lock_guard lock(s().mutex);
    hook = std::exchange(s().lookup_hook, nullptr);
    arg = s().lookup_arg;
  }
  if (hook != nullptr) hook(arg);  // the driver loading a module lazily
  return CUDA_ERROR_INVALID_HANDLE;
}
FAKE CUresult cuFuncGetModule(CUmodule* m, CUfunction f) {
  std::lock_guard lock(s().mutex);
  const auto it = s().functions.find(f);
  if (it == s().functions.end()) return CUDA_ERROR_INVALID_HANDLE;
  *m = it->second.first;
  return CUDA_SUCCESS;
}
FAKE CUresult cuFuncGetName(const char** name, CUfunction f) {
  std::lock_guard lock(s().mutex);
  const auto it = s().functions.find(f);
  if (it == s().functions.end()) return CUDA_ERROR_INVALID_HANDLE;
  *name = it->second.second.c_str();
  return CUDA_SUCCESS;
}
FAKE CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  std::lock_guard lock(s().mutex);
  *status = s().capturing.count(stream) ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                                        : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

FAKE CUresult cuStreamQuery(CUstream stream) {
  std::lock_guard lock(s().mutex);
  ++s().stream_queries;
  return s().busy.count(stream) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

FAKE void fake_cuda_set_stream_busy(CUstream stream, bool busy) {
  set_member(s().busy, stream, busy);
}

FAKE void fake_cuda_hold_events(bool hold) {
  std::lock_guard lock(s().mutex);
  s().hold = hold;
}
FAKE void fake_cuda_complete_events() {
  std::lock_guard lock(s().mutex);
  for (auto& [e, st] : s().events) st.complete = true;
}
FAKE void fake_cuda_define_function(CUfunction f, CUmodule m, const char* mangled) {
  std::lock_guard lock(s().mutex);
  s().functions[f] = {m, mangled};
}
FAKE void fake_cuda_set_capturing(CUstream stream, bool capturing) {
  set_member(s().capturing, stream, capturing);
}

FAKE void fake_cuda_on_next_kernel_lookup(void (*hook)(void*), void* arg) {
  std::lock_guard lock(s().mutex);
  s().lookup_hook = hook;
  s().lookup_arg = arg;
}
