// A probe injection library for the Compute Sanitizer API (CUDA_INJECTION64_PATH):
// measures what a bare Sanitizer API subscriber costs, what patching costs,
// and whether the footprint tables of inject/precise measure what kernels
// really touch. PROBE_MODE chooses what it does:
//   api         subscribe to the driver and runtime API domains, count
//   launch      api + the launch domain
//   patch-null  launch + patch every module, but give launches no table
//   track       patch, and measure every launch; a launch's table is read
//               once an event recorded after it has completed (polled at
//               every API call), through a private stream
//   track-sync  the same, but synchronize the launch's stream at the exit of
//               the launching API call
//   track-lane  the same with the per-lane callback (no warp aggregation)
//   census      count global accesses by (flags, new value, size)
// PROBE_PRINT=1 prints each launch's measured footprint; PROBE_PATCH_AT=launch
// patches a module at the first launch of one of its kernels instead of at
// load. The summary goes to stderr at exit.
#include <cuda.h>
#include <dlfcn.h>
#include <sanitizer.h>

#include <atomic>
#include <deque>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "inject/precise/footprint_decode.h"
#include "inject/precise/footprint_layout.h"
#include "inject/sanitizer_api/sanitizer_library.h"

namespace sp = streamsan::precise;
namespace sa = streamsan::sanitizer_api;

extern const unsigned char streamsan_footprint_patches[];
extern const std::size_t streamsan_footprint_patches_size;

namespace {

using clock_type = std::chrono::steady_clock;

struct table {
  void* device = nullptr;
  sp::table_layout layout;
};

struct driver {
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventQuery) event_query = nullptr;
  decltype(&::cuEventSynchronize) event_synchronize = nullptr;
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
};

struct pending_launch {
  table t;
  CUstream stream = nullptr;
  Sanitizer_StreamHandle hstream = nullptr;
  CUcontext ctx = nullptr;
  CUfunction function = nullptr;
  std::string name;
  CUevent done = nullptr;
};

thread_local bool busy = false;
thread_local bool has_just_launched = false;
thread_local pending_launch just_launched;

struct busy_guard {
  busy_guard() { busy = true; }
  ~busy_guard() { busy = false; }
};

struct probe {
  const sa::sanitizer_library* lib = nullptr;
  std::string mode;
  bool print = false;
  bool patch_at_launch = false;
  bool patching = false;
  bool tracking = false;
  bool sync_at_exit = false;
  driver drv;
  std::deque<pending_launch> pending;
  std::vector<CUevent> free_events;
  std::map<CUcontext, std::pair<CUstream, Sanitizer_StreamHandle>> private_streams;
  std::uint64_t polls = 0, forced = 0;
  double record_ms = 0, poll_ms = 0;
  const char* access_callback = "streamsan_global_access";
  std::atomic<std::uint64_t> api_callbacks{0};
  std::atomic<std::uint64_t> launches{0};
  std::mutex mutex;
  std::set<CUcontext> contexts_with_patches;
  std::set<CUmodule> patched;
  std::map<CUfunction, std::uint32_t> capacity_hint;
  std::map<std::uint32_t, std::vector<table>> free_tables;
  table current;  // of the launch between begin and end (one thread at a time here)
  double patch_ms = 0, sync_ms = 0, decode_ms = 0, setup_ms = 0;
  std::uint64_t tracked = 0, incomplete = 0, pages = 0, fragmented = 0, read_back = 0,
                intervals = 0;
  std::vector<std::uint64_t> census;
  Sanitizer_StreamHandle census_stream = nullptr;
  void* census_table = nullptr;
  sp::table_layout census_layout;
};

probe& the_probe() {
  static probe* p = new probe;
  return *p;
}

double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

void check(SanitizerResult r, const char* what) {
  if (r != SANITIZER_SUCCESS) {
    std::fprintf(stderr, "probe: %s: %s\n", what, the_probe().lib->describe(r).c_str());
  }
}

void ensure_patches(probe& p, CUcontext ctx) {
  if (!p.contexts_with_patches.insert(ctx).second) return;
  check(p.lib->add_patches(streamsan_footprint_patches, ctx), "sanitizerAddPatches");
}

void patch_module(probe& p, CUcontext ctx, CUmodule module) {
  if (!p.patched.insert(module).second) return;
  const auto t = clock_type::now();
  ensure_patches(p, ctx);
  check(p.lib->patch_instructions(SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, module,
                                  p.access_callback),
        "patch global accesses");
  if (p.mode != "census") {
    check(p.lib->patch_instructions(SANITIZER_INSTRUCTION_MEMCPY_ASYNC, module,
                                    "streamsan_memcpy_async"),
          "patch memcpy_async");
    check(p.lib->patch_instructions(SANITIZER_INSTRUCTION_BULK_COPY_GLOBAL_TO_SHARED, module,
                                    "streamsan_bulk_global_to_shared"),
          "patch bulk g2s");
    check(p.lib->patch_instructions(SANITIZER_INSTRUCTION_BULK_COPY_SHARED_TO_GLOBAL, module,
                                    "streamsan_bulk_shared_to_global"),
          "patch bulk s2g");
    check(p.lib->patch_instructions(SANITIZER_INSTRUCTION_BULK_REDUCTION_SHARED_TO_GLOBAL, module,
                                    "streamsan_bulk_reduction_to_global"),
          "patch bulk reduction");
  }
  check(p.lib->patch_module(module), "sanitizerPatchModule");
  p.patch_ms += ms_since(t);
}

table acquire(probe& p, CUcontext ctx, std::uint32_t capacity, Sanitizer_StreamHandle s) {
  auto& pool = p.free_tables[capacity];
  if (!pool.empty()) {
    table t = pool.back();
    pool.pop_back();
    return t;
  }
  table t;
  t.layout = sp::layout_for(capacity);
  check(p.lib->alloc(ctx, &t.device, t.layout.bytes), "sanitizerAlloc");
  const sp::table_view v = sp::view_at(reinterpret_cast<std::uintptr_t>(t.device), t.layout);
  check(p.lib->memcpy_to_device(t.device, const_cast<sp::table_view*>(&v), sizeof v, s),
        "write table view");
  check(p.lib->stream_synchronize(s), "sync after view");
  return t;
}

void launch_begin(probe& p, const Sanitizer_LaunchData& d) {
  p.launches.fetch_add(1, std::memory_order_relaxed);
  if (p.patch_at_launch) patch_module(p, d.context, d.module);
  if (p.mode == "census") {
    if (p.census_table == nullptr) {
      p.census_layout = sp::layout_for(1);
      check(p.lib->alloc(d.context, &p.census_table, p.census_layout.bytes), "census alloc");
      const sp::table_view v =
          sp::view_at(reinterpret_cast<std::uintptr_t>(p.census_table), p.census_layout);
      check(p.lib->memcpy_to_device(p.census_table, const_cast<sp::table_view*>(&v), sizeof v,
                                    d.hStream),
            "census view");
      check(p.lib->memset(static_cast<char*>(p.census_table) + p.census_layout.cleared_offset, 0,
                          p.census_layout.bytes - p.census_layout.cleared_offset, d.hStream),
            "census clear");
    }
    p.census_stream = d.hStream;
    check(p.lib->set_launch_callback_data(d.hLaunch, d.function, d.hStream, p.census_table),
          "set census data");
    return;
  }
  if (!p.tracking) return;
  const auto t = clock_type::now();
  auto& hint = p.capacity_hint[d.function];
  if (hint == 0) hint = 64;
  p.current = acquire(p, d.context, hint, d.hStream);
  check(p.lib->memset(static_cast<char*>(p.current.device) + p.current.layout.cleared_offset, 0,
                      p.current.layout.bytes - p.current.layout.cleared_offset, d.hStream),
        "clear table");
  check(p.lib->set_launch_callback_data(d.hLaunch, d.function, d.hStream, p.current.device),
        "sanitizerSetLaunchCallbackData");
  p.setup_ms += ms_since(t);
}

const char* kind_name(sp::footprint_kind k) {
  switch (k) {
    case sp::footprint_kind::read: return "read";
    case sp::footprint_kind::write: return "write";
    case sp::footprint_kind::atomic: return "atomic";
  }
  return "?";
}

void launch_end(probe& p, const Sanitizer_LaunchData& d) {
  if (!p.tracking) return;
  just_launched = pending_launch{p.current, d.stream, d.hStream, d.context, d.function,
                                 d.functionName ? d.functionName : "?", nullptr};
  has_just_launched = true;
}

std::pair<CUstream, Sanitizer_StreamHandle> private_stream(probe& p, CUcontext ctx) {
  auto it = p.private_streams.find(ctx);
  if (it != p.private_streams.end()) return it->second;
  CUstream s = nullptr;
  Sanitizer_StreamHandle h = nullptr;
  if (p.drv.stream_create(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    std::fprintf(stderr, "probe: cuStreamCreate failed\n");
  }
  check(p.lib->stream_handle(ctx, s, &h), "sanitizerGetStreamHandle");
  return p.private_streams[ctx] = {s, h};
}

void read_back(probe& p, pending_launch& l, Sanitizer_StreamHandle via) {
  const auto t = clock_type::now();
  SanitizerResult last = SANITIZER_SUCCESS;
  const auto fetch = [&](void* dst, std::uint64_t src, std::size_t size) {
    last = p.lib->memcpy_to_host(dst, reinterpret_cast<void*>(src), size, via);
    return last == SANITIZER_SUCCESS;
  };
  try {
    const auto fp =
        sp::decode_footprint(l.t.layout, reinterpret_cast<std::uint64_t>(l.t.device), fetch);
    ++p.tracked;
    p.pages += fp.pages;
    p.fragmented += fp.fragmented_pages;
    p.read_back += fp.bytes_read_back;
    p.intervals += fp.intervals.size();
    if (!fp.complete) {
      ++p.incomplete;
      auto& hint = p.capacity_hint[l.function];
      hint = std::max<std::uint32_t>(hint * 4, fp.pages * 2);
    }
    if (p.print) {
      std::fprintf(stderr, "measured launch=%llu kernel=%s pages=%u fragmented=%u complete=%d\n",
                   static_cast<unsigned long long>(p.tracked), l.name.c_str(), fp.pages,
                   fp.fragmented_pages, fp.complete ? 1 : 0);
      for (const auto& i : fp.intervals) {
        std::fprintf(stderr, "  %s 0x%llx 0x%llx\n", kind_name(i.kind),
                     static_cast<unsigned long long>(i.begin),
                     static_cast<unsigned long long>(i.end));
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "probe: %s: %s\n", e.what(), p.lib->describe(last).c_str());
  }
  p.free_tables[l.t.layout.capacity].push_back(l.t);
  if (l.done != nullptr) p.free_events.push_back(l.done);
  p.decode_ms += ms_since(t);
}

// At the exit of the API call that launched: either synchronize now
// (track-sync) or record an event to poll.
void after_launch_call(probe& p) {
  has_just_launched = false;
  pending_launch l = just_launched;
  if (p.sync_at_exit) {
    auto t = clock_type::now();
    check(p.lib->stream_synchronize(l.hstream), "sanitizerStreamSynchronize");
    p.sync_ms += ms_since(t);
    read_back(p, l, l.hstream);
    return;
  }
  const auto t = clock_type::now();
  if (!p.free_events.empty()) {
    l.done = p.free_events.back();
    p.free_events.pop_back();
  } else if (p.drv.event_create(&l.done, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
    std::fprintf(stderr, "probe: cuEventCreate failed\n");
  }
  if (p.drv.event_record(l.done, l.stream) != CUDA_SUCCESS) {
    std::fprintf(stderr, "probe: cuEventRecord failed\n");
  }
  p.pending.push_back(std::move(l));
  p.record_ms += ms_since(t);
}

// Reads back every launch at the head of the queue that has completed.
void poll(probe& p, bool wait) {
  if (p.pending.empty()) return;
  const auto t = clock_type::now();
  ++p.polls;
  while (!p.pending.empty()) {
    auto& head = p.pending.front();
    if (wait) {
      p.drv.event_synchronize(head.done);
    } else if (p.drv.event_query(head.done) != CUDA_SUCCESS) {
      break;
    }
    read_back(p, head, private_stream(p, head.ctx).second);
    p.pending.pop_front();
  }
  p.poll_ms += ms_since(t);
}

void SANITIZERAPI on_callback(void* userdata, Sanitizer_CallbackDomain domain,
                              Sanitizer_CallbackId cbid, const void* data) {
  auto& p = *static_cast<probe*>(userdata);
  if (busy) return;
  busy_guard guard;
  switch (domain) {
    case SANITIZER_CB_DOMAIN_DRIVER_API:
    case SANITIZER_CB_DOMAIN_RUNTIME_API: {
      p.api_callbacks.fetch_add(1, std::memory_order_relaxed);
      if (!p.tracking) return;
      const auto* d = static_cast<const Sanitizer_CallbackData*>(data);
      std::lock_guard lock(p.mutex);
      if (d->callbackSite == SANITIZER_API_EXIT && has_just_launched) after_launch_call(p);
      if (d->callbackSite == SANITIZER_API_ENTER) poll(p, false);
      return;
    }
    case SANITIZER_CB_DOMAIN_RESOURCE:
      if (cbid == SANITIZER_CBID_RESOURCE_MODULE_LOADED && p.patching && !p.patch_at_launch) {
        std::lock_guard lock(p.mutex);
        const auto* m = static_cast<const Sanitizer_ResourceModuleData*>(data);
        patch_module(p, m->context, m->module);
      }
      return;
    case SANITIZER_CB_DOMAIN_LAUNCH: {
      std::lock_guard lock(p.mutex);
      const auto* l = static_cast<const Sanitizer_LaunchData*>(data);
      if (cbid == SANITIZER_CBID_LAUNCH_BEGIN) launch_begin(p, *l);
      if (cbid == SANITIZER_CBID_LAUNCH_END) launch_end(p, *l);
      return;
    }
    default:
      return;
  }
}

void print_census(probe& p) {
  if (p.census_table == nullptr) return;
  std::vector<std::uint32_t> cells(256);
  // The census counts live in the first bitmap words.
  p.lib->memcpy_to_host(cells.data(),
                        static_cast<char*>(p.census_table) + p.census_layout.bits_offset,
                        cells.size() * 4, p.census_stream);
  static const char* sizes[] = {"1", "2", "4", "8", "16"};
  for (unsigned c = 0; c < cells.size(); ++c) {
    if (cells[c] == 0) continue;
    std::fprintf(stderr, "census flags=0x%x new_value=%s size=%s count=%u\n", c >> 4,
                 (c >> 3) & 1 ? "yes" : "null", (c & 7) < 5 ? sizes[c & 7] : "?", cells[c]);
  }
}

void at_exit() {
  auto& p = the_probe();
  {
    busy_guard guard;
    std::lock_guard lock(p.mutex);
    poll(p, true);
  }
  print_census(p);
  std::fprintf(stderr, "probe: polls=%llu record_ms=%.1f poll_ms=%.1f\n",
               static_cast<unsigned long long>(p.polls), p.record_ms, p.poll_ms);
  std::fprintf(stderr,
               "probe: mode=%s api_callbacks=%llu launches=%llu patched_modules=%zu patch_ms=%.1f "
               "tracked=%llu incomplete=%llu pages=%llu fragmented=%llu read_back=%llu "
               "intervals=%llu setup_ms=%.1f sync_ms=%.1f decode_ms=%.1f\n",
               p.mode.c_str(), static_cast<unsigned long long>(p.api_callbacks.load()),
               static_cast<unsigned long long>(p.launches.load()), p.patched.size(), p.patch_ms,
               static_cast<unsigned long long>(p.tracked),
               static_cast<unsigned long long>(p.incomplete),
               static_cast<unsigned long long>(p.pages),
               static_cast<unsigned long long>(p.fragmented),
               static_cast<unsigned long long>(p.read_back),
               static_cast<unsigned long long>(p.intervals), p.setup_ms, p.sync_ms, p.decode_ms);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  auto& p = the_probe();
  const auto loaded = sa::load_sanitizer_library();
  if (loaded.library == nullptr) {
    std::fprintf(stderr, "probe: %s\n", loaded.error.c_str());
    return 0;
  }
  p.lib = loaded.library;
  const char* mode = std::getenv("PROBE_MODE");
  p.mode = mode ? mode : "api";
  p.print = std::getenv("PROBE_PRINT") != nullptr;
  const char* at = std::getenv("PROBE_PATCH_AT");
  p.patch_at_launch = at && std::string(at) == "launch";
  p.patching = p.mode == "patch-null" || p.mode == "track" || p.mode == "track-lane" ||
               p.mode == "census";
  p.tracking = p.mode == "track" || p.mode == "track-lane" || p.mode == "track-sync";
  p.sync_at_exit = p.mode == "track-sync";
  p.patching = p.patching || p.mode == "track-sync";
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda == nullptr) cuda = dlopen("libcuda.so.1", RTLD_NOW);
  p.drv.event_create = reinterpret_cast<decltype(p.drv.event_create)>(dlsym(cuda, "cuEventCreate"));
  p.drv.event_record = reinterpret_cast<decltype(p.drv.event_record)>(dlsym(cuda, "cuEventRecord"));
  p.drv.event_query = reinterpret_cast<decltype(p.drv.event_query)>(dlsym(cuda, "cuEventQuery"));
  p.drv.event_synchronize =
      reinterpret_cast<decltype(p.drv.event_synchronize)>(dlsym(cuda, "cuEventSynchronize"));
  p.drv.stream_create =
      reinterpret_cast<decltype(p.drv.stream_create)>(dlsym(cuda, "cuStreamCreate"));
  if (p.mode == "track-lane") p.access_callback = "streamsan_global_access_per_lane";
  if (p.mode == "census") p.access_callback = "streamsan_global_access_census";
  Sanitizer_SubscriberHandle handle;
  check(p.lib->subscribe(&handle, on_callback, &p), "sanitizerSubscribe");
  check(p.lib->enable_domain(1, handle, SANITIZER_CB_DOMAIN_DRIVER_API), "enable driver");
  check(p.lib->enable_domain(1, handle, SANITIZER_CB_DOMAIN_RUNTIME_API), "enable runtime");
  if (p.mode != "api") {
    check(p.lib->enable_domain(1, handle, SANITIZER_CB_DOMAIN_LAUNCH), "enable launch");
  }
  if (p.patching) {
    check(p.lib->enable_callback(1, handle, SANITIZER_CB_DOMAIN_RESOURCE,
                                 SANITIZER_CBID_RESOURCE_MODULE_LOADED),
          "enable module loaded");
  }
  std::atexit(at_exit);
  std::fprintf(stderr, "probe: %s, mode %s\n", p.lib->path.c_str(), p.mode.c_str());
  return 1;
}
