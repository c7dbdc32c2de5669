#include "runtime/injection/symbol_names.h"

#include <backtrace.h>
#include <dlfcn.h>
#include <unwind.h>

#include <cstdio>

#include "runtime/injection/kernel_signature.h"

namespace streamsan::injection {
namespace {

backtrace_state* symbol_state() {
  static backtrace_state* state =
      backtrace_create_state(nullptr, /*threaded=*/1, [](void*, const char*, int) {}, nullptr);
  return state;
}

}  // namespace

std::string raw_symbol_name(std::uint64_t address) {
  backtrace_state* state = symbol_state();
  std::string name;
  if (state == nullptr) return name;
  backtrace_syminfo(
      state, static_cast<uintptr_t>(address),
      [](void* data, uintptr_t, const char* symname, uintptr_t, uintptr_t) {
        if (symname) *static_cast<std::string*>(data) = symname;
      },
      [](void*, const char*, int) {}, &name);
  return name;
}

std::string function_name(std::uint64_t address) {
  const std::string raw = raw_symbol_name(address);
  if (raw.empty()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(address));
    return buf;
  }
  return demangle(raw).value_or(raw);
}

bool is_static_cudart_private(std::uint64_t address) {
  return raw_symbol_name(address).rfind("libcudart_static_", 0) == 0;
}

bool inside_cuda_runtime_call() {
  struct walk {
    bool found = false;
    int frames = 0;
  } w;
  _Unwind_Backtrace(
      [](_Unwind_Context* ctx, void* arg) -> _Unwind_Reason_Code {
        auto* w = static_cast<walk*>(arg);
        const std::uint64_t ip = _Unwind_GetIP(ctx);
        if (ip == 0 || ++w->frames > 128) return _URC_END_OF_STACK;
        Dl_info info{};
        if (dladdr(reinterpret_cast<void*>(ip), &info) != 0 && info.dli_fname != nullptr &&
            std::string_view(info.dli_fname).find("libcudart.so") != std::string_view::npos) {
          w->found = true;
          return _URC_END_OF_STACK;
        }
        const std::string name = raw_symbol_name(ip - 1);
        // The static runtime's private functions, and its API entry points
        // (cudaMalloc, __cudaRegisterFatBinary, ...).
        if (name.rfind("libcudart_static_", 0) == 0 ||
            (name.size() > 4 && name.rfind("cuda", 0) == 0 && name[4] >= 'A' && name[4] <= 'Z') ||
            name.rfind("__cuda", 0) == 0) {
          w->found = true;
          return _URC_END_OF_STACK;
        }
        return _URC_NO_REASON;
      },
      &w);
  return w.found;
}

}  // namespace streamsan::injection
