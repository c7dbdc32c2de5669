// The entry points of libstreamsan_inject.so (exports.map lists them).
#include <dlfcn.h>
#include <link.h>

#include <cstddef>
#include <cstdlib>
#include <string>
#include <string_view>

#include "include/streamsan/annotate.h"
#include "inject/session/process_session.h"

// The library is built with hidden visibility; exports.map lists these too.
#define STREAMSAN_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using streamsan::access_mode;
using streamsan::injection::annotated_range;
namespace process_session = streamsan::injection::process_session;

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
  process_session::cuda_initialized();
  return 1;
}

// NVTX_INJECTION64_PATH: called at the program's first NVTX call, which may
// come before any CUDA call; the session starts then so that the range is
// not lost, and our own NVTX handlers take the ranges (Note [NVTX without
// CUPTI]).
STREAMSAN_EXPORT int InitializeInjectionNvtx2(void* get_export_table) {
  return process_session::start().nvtx_initialized(get_export_table);
}

// NVTX's extensions (payloads, counters, memory ranges) order nothing.
STREAMSAN_EXPORT int InitializeInjectionNvtxExtension(void*) { return 0; }

STREAMSAN_EXPORT void streamsan_inject_annotate_next_launch(struct CUstream_st* stream,
                                                      const streamsan_range* ranges,
                                                      size_t count) {
  auto* s = process_session::current();
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
  auto* s = process_session::current();
  if (s == nullptr) return;
  const annotated_range r[] = {
      {reinterpret_cast<std::uint64_t>(address), size, mode_of(mode)}};
  s->model().host_accessed(s->capture_call_site(), r,
                           label ? label : "host access");
}

namespace {
// The benchmarks' controls below act only when the run asked for them
// (STREAMSAN_BENCH_PAUSE=1), and only on the Sanitizer API source.
streamsan::injection::sanitizer_source* benchmark_source() noexcept {
  const char* enabled = std::getenv("STREAMSAN_BENCH_PAUSE");
  if (enabled == nullptr || std::string_view(enabled) != "1") return nullptr;
  auto* s = process_session::current();
  return s == nullptr ? nullptr : s->measuring_source();
}

// Applies `change` to the benchmark source: 1 when applied, else 0.
template <class Change>
int change_benchmark_source(Change change) noexcept {
  auto* source = benchmark_source();
  if (source == nullptr) return 0;
  try {
    change(*source);
    return 1;
  } catch (...) {
    return 0;  // nothing escapes into the program
  }
}
}  // namespace

// Benchmarks only (Note [Launches paused for a benchmark] in
// sanitizer_source.cpp): 1 when applied, else 0.
STREAMSAN_EXPORT int streamsan_inject_bench_pause_launches(int paused) {
  return change_benchmark_source([&](auto& source) { source.pause_launches(paused != 0); });
}

// Benchmarks only (Note [Launches unseen for a benchmark] in
// sanitizer_source.cpp): 1 when applied, else 0.
STREAMSAN_EXPORT int streamsan_inject_bench_launch_callbacks(int on) {
  return change_benchmark_source([&](auto& source) { source.set_launch_callbacks(on != 0); });
}

// Benchmarks only (Note [The subscription dropped for a benchmark] in
// sanitizer_source.cpp): 1 when applied, else 0 (refused while a module is
// patched). The caching allocator's blocks go unseen with the calls (Note
// [Blocks unseen while the subscription is dropped] in
// inject/model/cuda_model_blocks.cpp).
STREAMSAN_EXPORT int streamsan_inject_bench_subscribed(int on) {
  const int applied =
      change_benchmark_source([&](auto& source) { source.set_subscribed(on != 0); });
  if (auto* s = process_session::current(); applied == 1 && s != nullptr) {
    s->model().set_blocks_unseen(on == 0);
  }
  return applied;
}

// Benchmarks only (Note [Runtime launch callbacks toggled for a benchmark]
// in sanitizer_source.cpp): 1 when applied, else 0.
STREAMSAN_EXPORT int streamsan_inject_bench_runtime_launch_callbacks(int on) {
  return change_benchmark_source(
      [&](auto& source) { source.set_runtime_launch_callbacks(on != 0); });
}
