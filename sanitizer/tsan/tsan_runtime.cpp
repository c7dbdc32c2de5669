#include "sanitizer/tsan/tsan_runtime.h"

#include <dlfcn.h>

#include <array>
#include <cstdlib>
#include <string>

namespace streamsan::tsan {
namespace {

// libtsan sonames whose runtime this bridge knows (Note [TSan interface
// versions]).
constexpr std::array known_libtsan_versions = {0, 2};

std::string basename_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string describe_module(const std::string& module, const std::string& executable) {
  const std::string base = basename_of(module);
  if (libtsan_soname_version(base) >= 0) return base + " (GCC)";
  if (base.find("clang_rt.tsan") != std::string::npos) return base + " (Clang)";
  if (!module.empty() && module == executable) return "the executable (a static runtime)";
  return base.empty() ? std::string("an unknown module") : base;
}

std::string refusal(const std::string& runtime, const std::string& why) {
  return "streamsan: ThreadSanitizer runtime " + runtime + " " + why +
         "; the ThreadSanitizer bridge stays off (host accesses are seen only through "
         "annotations)";
}

template <class Fn>
bool bind(const symbol_source& symbols, const char* name, Fn& slot) {
  slot = reinterpret_cast<Fn>(symbols.find(name));
  return slot != nullptr;
}

std::string real_path(const char* path) {
  char* resolved = ::realpath(path, nullptr);
  if (resolved == nullptr) return path;
  std::string out(resolved);
  std::free(resolved);
  return out;
}

}  // namespace

int libtsan_soname_version(std::string_view module) {
  constexpr std::string_view prefix = "libtsan.so.";
  if (module.substr(0, prefix.size()) != prefix) return -1;
  std::string_view rest = module.substr(prefix.size());
  const auto dot = rest.find('.');
  if (dot != std::string_view::npos) rest = rest.substr(0, dot);
  if (rest.empty() || rest.size() > 4) return -1;
  int version = 0;
  for (const char c : rest) {
    if (c < '0' || c > '9') return -1;
    version = version * 10 + (c - '0');
  }
  return version;
}

symbol_source process_symbols() {
  return {
      [](const char* name) { return ::dlsym(RTLD_DEFAULT, name); },
      [](const void* address) -> std::string {
        Dl_info info{};
        if (::dladdr(address, &info) == 0 || info.dli_fname == nullptr) return {};
        return real_path(info.dli_fname);
      },
      [] { return real_path("/proc/self/exe"); },
  };
}

probe_result probe_tsan_runtime(const symbol_source& symbols) {
  probe_result r;
  void* init = symbols.find("__tsan_init");
  if (init == nullptr) return r;  // absent

  const std::string executable = symbols.executable();
  const std::string module = symbols.module_of(init);
  r.runtime = describe_module(module, executable);

  const int soname = libtsan_soname_version(basename_of(module));
  if (soname >= 0) {
    bool known = false;
    for (const int v : known_libtsan_versions) known = known || v == soname;
    if (!known) {
      r.status = probe_status::refused;
      r.message = refusal(r.runtime, "has interface version " + std::to_string(soname) +
                                         " (libtsan.so." + std::to_string(soname) +
                                         "); this bridge knows libtsan.so.0 and libtsan.so.2");
      return r;
    }
  }

  tsan_api& a = r.api;
  // Required: interface version 1.
  const char* missing = nullptr;
  const auto need = [&](const char* name, auto& slot) {
    if (!bind(symbols, name, slot) && missing == nullptr) missing = name;
  };
  need("__tsan_get_current_fiber", a.get_current_fiber);
  need("__tsan_create_fiber", a.create_fiber);
  need("__tsan_destroy_fiber", a.destroy_fiber);
  need("__tsan_switch_to_fiber", a.switch_to_fiber);
  need("__tsan_acquire", a.acquire);
  need("__tsan_release", a.release);
  need("__tsan_atomic64_store", a.atomic64_store);
  need("__tsan_read_range", a.read_range);
  need("__tsan_write_range", a.write_range);
  need("__tsan_func_entry", a.func_entry);
  need("__tsan_func_exit", a.func_exit);
  need("__tsan_ignore_thread_begin", a.ignore_thread_begin);
  need("__tsan_ignore_thread_end", a.ignore_thread_end);
  if (missing != nullptr) {
    r.status = probe_status::refused;
    r.message = refusal(r.runtime, std::string("lacks ") + missing + " (interface version " +
                                       std::to_string(bridge_interface_version) +
                                       " needs it: fibers came with LLVM 8 and GCC 9)");
    r.api = {};
    return r;
  }
  // Optional.
  bind(symbols, "__tsan_set_fiber_name", a.set_fiber_name);
  bind(symbols, "__tsan_read_range_pc", a.read_range_pc);
  bind(symbols, "__tsan_write_range_pc", a.write_range_pc);
  r.status = probe_status::usable;
  return r;
}

}  // namespace streamsan::tsan
