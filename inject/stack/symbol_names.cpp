#include "inject/stack/symbol_names.h"

#include <backtrace.h>

#include <cstdio>

#include "inject/model/kernel_signature.h"

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

}  // namespace streamsan::injection
