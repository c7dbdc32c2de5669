// The entry points of libstreamsan_inject.so (exports.map lists them).
#include <dlfcn.h>
#include <link.h>

#include <cstddef>
#include <string>

#include "include/streamsan/annotate.h"
#include "inject/session/session.h"

// The library is built with hidden visibility; exports.map lists these too.
#define STREAMSAN_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using streamsan::access_mode;
using streamsan::injection::annotated_range;
using streamsan::injection::session;

// CUPTI's own NVTX entry point: NVTX_INJECTION64_PATH names this library
// (streamsan run sets both variables to it) and NVTX hands over to CUPTI,
// whose NVTX callbacks the session subscribes to.
void* cupti_symbol(const char* name) {
  std::string path;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        const std::string_view n = info->dlpi_name ? info->dlpi_name : "";
        if (n.find("libcupti.so") == std::string_view::npos) return 0;
        *static_cast<std::string*>(data) = n;
        return 1;
      },
      &path);
  if (path.empty()) return nullptr;
  void* lib = dlopen(path.c_str(), RTLD_NOLOAD | RTLD_LAZY);
  if (lib == nullptr) return nullptr;
  void* sym = dlsym(lib, name);
  dlclose(lib);
  return sym;
}

access_mode mode_of(int m) {
  switch (m) {
    case STREAMSAN_READ: return access_mode::read;
    case STREAMSAN_WRITE: return access_mode::write;
    default: return access_mode::read_write;
  }
}

}  // namespace

// CUDA_INJECTION64_PATH: called by the driver during cuInit.
STREAMSAN_EXPORT int InitializeInjection(void) {
  session::start().cuda_initialized();
  return 1;
}

// NVTX_INJECTION64_PATH: called at the program's first NVTX call, which may
// come before any CUDA call; the session starts then so that the range is
// not lost.
STREAMSAN_EXPORT int InitializeInjectionNvtx2(void* get_export_table) {
  session::start().try_subscribe();
  using init_fn = int (*)(void*);
  auto* fn = reinterpret_cast<init_fn>(cupti_symbol("InitializeInjectionNvtx2"));
  return fn != nullptr ? fn(get_export_table) : 0;
}

STREAMSAN_EXPORT int InitializeInjectionNvtxExtension(void* module_info) {
  using init_fn = int (*)(void*);
  auto* fn = reinterpret_cast<init_fn>(cupti_symbol("InitializeInjectionNvtxExtension"));
  return fn != nullptr ? fn(module_info) : 0;
}

STREAMSAN_EXPORT void streamsan_inject_annotate_next_launch(struct CUstream_st* stream,
                                                      const streamsan_range* ranges,
                                                      size_t count) {
  auto* s = session::current();
  if (s == nullptr) return;
  std::vector<annotated_range> converted;
  converted.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    converted.push_back(annotated_range{reinterpret_cast<std::uint64_t>(ranges[i].address),
                                        ranges[i].size, mode_of(ranges[i].mode)});
  }
  // Stream 0 means the legacy default stream here; see annotate.h.
  s->model().annotate_next_launch({reinterpret_cast<std::uintptr_t>(stream), false}, converted);
}

STREAMSAN_EXPORT void streamsan_inject_host_access(const void* address, size_t size, int mode,
                                             const char* label) {
  auto* s = session::current();
  if (s == nullptr) return;
  const annotated_range r[] = {
      {reinterpret_cast<std::uint64_t>(address), size, mode_of(mode)}};
  s->model().host_accessed(s->capture_call_site(), r,
                           label ? label : "host access");
}
