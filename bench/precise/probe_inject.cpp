// A probe injection library for the Compute Sanitizer API (CUDA_INJECTION64_PATH),
// built on the production launch tracker (inject/sanitizer_api): what a bare
// Sanitizer API subscriber costs, what patching costs, and whether measured
// footprints are exact. PROBE_MODE chooses what it does:
//   api         subscribe to the driver and runtime API domains, count
//   api-launch  only the driver calls streamsan's source keeps on in the
//               launch loop's steady state: the four cuLaunchKernel
//               variants, cuEventRecord and cuStreamWaitEvent (the floor
//               under streamsan's own configuration, Note [The floor is
//               the callbacks we keep])
//   launch      api + the launch domain
//   patch-null  launch + patch every module at load, give launches no table
//   track       patch at load and measure every launch (event-polled read-back)
//   lazy        patch a module at the entry of the first launch call of one of
//               its kernels (not at load), then measure
//   census      count global accesses by (flags, new value, size)
//   graphs      track + graph node launches: prints each node launch
//               (node handle, type, exec, launch id, stream, the API call it
//               came in) and measures the first kernel node of each graph
//               launch call (the tracker measures one launch per call)
// PROBE_HANDOFF=N: CUPTI takes the calls first and, at the exit of the Nth
// driver launch, detaches and hands over to the Sanitizer API in the mode
// chosen (use lazy: modules loaded before the handoff get no load callback);
// probe_cupti_handoff.cpp.
// PROBE_RELEASE=N (api-launch mode): after the Nth driver launch, a thread of
// the probe unsubscribes the Sanitizer API, and with PROBE_RELEASE_TO=cupti
// then subscribes CUPTI to the same driver calls (probe_cupti_handoff.cpp):
// does the Sanitizer API's floor end with its subscription, and can CUPTI
// take over after it (Note [The floor is the callbacks we keep])? On an
// H200 (2026-12-01) the callbacks stop, and cuptiSubscribe still answers
// 39 (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED).
// PROBE_ACCESS_FN names the device function patched into global accesses
// (streamsan_global_access by default; footprint_patches.cu has pricing
// variants). PROBE_PRINT=1 prints each launch's measured footprint. The
// summary goes to stderr at exit.
#include <cuda.h>
#include <sanitizer.h>

#include <atomic>
#include <condition_variable>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "inject/precise/footprint_decode.h"
#include "inject/precise/footprint_layout.h"
#include "inject/sanitizer_api/launch_tracker.h"
#include "inject/sanitizer_api/sanitizer_library.h"

#include <dlfcn.h>

namespace sp = streamsan::precise;
namespace sa = streamsan::sanitizer_api;

extern "C" const unsigned char streamsan_footprint_patches[];

// probe_cupti_handoff.cpp (PROBE_HANDOFF).
bool probe_cupti_first(unsigned long long after, void (*then)());
unsigned long long probe_cupti_callbacks();
int probe_cupti_launches_only();

namespace {

thread_local bool in_probe_callback = false;
thread_local const char* in_call = nullptr;  // the API call in progress (graphs mode)
thread_local bool node_was_measured = false;

// PROBE_GRAPH_FUNCDATA: the first kernel node of each graph launch gets a
// table of the probe's own through sanitizerSetCallbackData (per function)
// instead of the tracker's per-launch data; read back at the call's exit.
struct function_table {
  void* device = nullptr;
  sp::table_layout layout;
  sp::table_view view;
  CUfunction function = nullptr;
  Sanitizer_StreamHandle stream = nullptr;
  bool armed = false;
};
function_table func_table;
// PROBE_GRAPH_FUNCDATA=pernode: every kernel node of a graph launch (up to
// four) gets a table of its own, its function's data set again in each
// node's callback: is the data bound per node at its submission, so that
// nodes of one kernel can be told apart without the device's help?
std::vector<function_table> node_tables;
std::size_t node_tables_used = 0;

// PROBE_GRAPH_FUNCDATA=turns: the nodes take turns, as the source's once
// did: in the k-th graph launch the
// (k mod 2)-th kernel node gets the table as its function's data, the other
// null per-launch data. Does null per-launch data given to a node in one
// launch keep it out of its function's data in the next launches too? With
// PROBE_TURN_SET=table the measured node also gets the table as its
// per-launch data: does that bring it back?
bool funcdata_is(std::string_view mode) {
  const char* v = std::getenv("PROBE_GRAPH_FUNCDATA");
  return v != nullptr && std::string_view(v) == mode;
}
bool funcdata_turns() { return funcdata_is("turns"); }
// PROBE_GRAPH_FUNCDATA=fnull: every kernel node's callback sets its
// function's data to null and gives it no per-launch data; =nothing: the
// callbacks do nothing at all. Does patched code then run (a null
// function's data is skipped by our patches), or read a wild pointer?
// PROBE_GRAPH_FUNCDATA=slot (with GRAPH_OTHER=1: a third node, of another
// kernel): the first fill node is measured through the function's data;
// the second gets null per-launch data at the first launch and a table of
// its own at the later ones; the other kernel's node null per-launch data
// after it. Is the per-launch value of graph nodes shared per function (the
// second table holds the second half) or by the whole launch (it is empty:
// the other node's null, set last, won)?
function_table slot_table;
unsigned turn_launches = 0;   // graph launches that ran kernel nodes so far
unsigned turn_node = 0;       // kernel nodes seen in this launch

bool per_node() {
  const char* v = std::getenv("PROBE_GRAPH_FUNCDATA");
  return v != nullptr && std::string_view(v) == "pernode";
}
using set_callback_data_fn = SanitizerResult (*)(CUfunction, const void*);
set_callback_data_fn probe_set_callback_data = nullptr;
struct probe_busy {
  probe_busy() { in_probe_callback = true; }
  ~probe_busy() { in_probe_callback = false; }
};

struct probe {
  const sa::sanitizer_library* lib = nullptr;
  std::unique_ptr<sa::launch_tracker> tracker;
  std::string mode;
  bool print = false;
  std::atomic<std::uint64_t> api_callbacks{0};
  std::atomic<std::uint64_t> launches{0};
  std::mutex mutex;
  std::map<CUfunction, std::string> names;
  std::uint64_t printed = 0;
  // lazy: modules seen loaded, patched at the next launch call's entry
  std::set<CUmodule> loaded;
  CUcontext last_context = nullptr;
  std::vector<std::uint32_t> census;
  void* census_table = nullptr;
  Sanitizer_StreamHandle census_stream = nullptr;
  sp::table_layout census_layout;
  // PROBE_RELEASE
  Sanitizer_SubscriberHandle handle = nullptr;
  unsigned long long release_after = 0;
  std::atomic<unsigned long long> launch_exits{0};
  std::mutex release_mutex;
  std::condition_variable release_now;
  bool release_due = false;
};

probe& the_probe() {
  static probe* p = new probe;
  return *p;
}

const char* kind_name(sp::footprint_kind k) {
  switch (k) {
    case sp::footprint_kind::read: return "read";
    case sp::footprint_kind::write: return "write";
    case sp::footprint_kind::atomic: return "atomic";
  }
  return "?";
}

void print_footprint(probe& p, sa::launch_tracker::launch_id, const sp::decoded_footprint& d) {
  if (!p.print) return;
  std::fprintf(stderr, "measured launch=%llu pages=%u fragmented=%u complete=%d\n",
               static_cast<unsigned long long>(++p.printed), d.pages, d.fragmented_pages,
               d.complete ? 1 : 0);
  for (const auto& i : d.intervals) {
    std::fprintf(stderr, "  %s 0x%llx 0x%llx\n", kind_name(i.kind),
                 static_cast<unsigned long long>(i.begin), static_cast<unsigned long long>(i.end));
  }
}

void poll_footprints(probe& p, bool wait) {
  if (!p.tracker) return;
  p.tracker->poll(wait, [&](auto id, const auto& d) { print_footprint(p, id, d); });
}

void patch_for_probe(probe& p, CUcontext ctx, CUmodule m) {
  std::string why;
  if (p.tracker->patch_module(ctx, m, why) != sa::launch_tracker::patch_outcome::patched) {
    std::fprintf(stderr, "probe: %s\n", why.c_str());
  }
}

SanitizerResult set_function_data(probe& p, CUfunction f, void* data) {
  if (probe_set_callback_data == nullptr) {
    void* h = dlopen(p.lib->path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    probe_set_callback_data =
        h ? reinterpret_cast<set_callback_data_fn>(dlsym(h, "sanitizerSetCallbackData")) : nullptr;
  }
  return probe_set_callback_data ? probe_set_callback_data(f, data) : SANITIZER_ERROR_INVALID_PARAMETER;
}

void clear_table(probe& p, const function_table& t, Sanitizer_StreamHandle stream) {
  auto* base = static_cast<char*>(t.device);
  p.lib->memset(base + t.layout.cleared_offset, 0, t.layout.cleared_end - t.layout.cleared_offset,
                stream);
  p.lib->stream_synchronize(stream);
}

void print_table(probe& p, const function_table& t) {
  const auto fetch = [&](void* dst, std::uint64_t src, std::size_t n) {
    return p.lib->memcpy_to_host(dst, reinterpret_cast<void*>(src), n, t.stream) ==
           SANITIZER_SUCCESS;
  };
  print_footprint(p, 0, sp::decode_footprint(t.layout, reinterpret_cast<std::uint64_t>(t.device), fetch));
}

// A cleared table of the probe's own as the node's function's data.
void prepare_table(probe& p, function_table& t, const Sanitizer_LaunchData& l) {
  if (t.device == nullptr) {
    t.layout = sp::layout_for(64);
    p.lib->alloc(l.context, &t.device, t.layout.bytes);
    t.view = sp::view_at(reinterpret_cast<std::uintptr_t>(t.device), t.layout);
  }
  p.lib->memcpy_to_device(t.device, &t.view, sizeof t.view, l.hApiStream);
  clear_table(p, t, l.hApiStream);
  t.function = l.function;
  t.stream = l.hApiStream;
  t.armed = true;
}

SanitizerResult arm_table(probe& p, function_table& t, const Sanitizer_LaunchData& l) {
  prepare_table(p, t, l);
  return set_function_data(p, l.function, t.device);
}

void take_slot(probe& p, const Sanitizer_LaunchData& l) {
  const unsigned node = turn_node++;
  if (node == 0) {
    const auto r = arm_table(p, func_table, l);
    std::fprintf(stderr, "probe-slot: launch %u node 0: function data -> %d\n", turn_launches,
                 static_cast<int>(r));
  } else if (node == 1 && turn_launches > 0) {
    prepare_table(p, slot_table, l);
    const auto r = p.lib->set_launch_callback_data(l.hLaunch, l.function, l.hStream, slot_table.device);
    std::fprintf(stderr, "probe-slot: launch %u node 1: launch data table -> %d\n", turn_launches,
                 static_cast<int>(r));
  } else {
    p.lib->set_launch_callback_data(l.hLaunch, l.function, l.hStream, nullptr);
    std::fprintf(stderr, "probe-slot: launch %u node %u: null launch data\n", turn_launches, node);
  }
}

void take_turn(probe& p, const Sanitizer_LaunchData& l) {
  const unsigned node = turn_node++;
  if (node == turn_launches % 2) {
    const auto r = arm_table(p, func_table, l);
    SanitizerResult lr = SANITIZER_SUCCESS;
    const char* set = std::getenv("PROBE_TURN_SET");
    if (set != nullptr && std::string_view(set) == "table") {
      lr = p.lib->set_launch_callback_data(l.hLaunch, l.function, l.hStream, func_table.device);
    }
    std::fprintf(stderr, "probe-turns: launch %u node %u measured (function data -> %d, launch data -> %d)\n",
                 turn_launches, node, static_cast<int>(r), static_cast<int>(lr));
  } else {
    p.lib->set_launch_callback_data(l.hLaunch, l.function, l.hStream, nullptr);
    std::fprintf(stderr, "probe-turns: launch %u node %u null launch data\n", turn_launches, node);
  }
}

// At the graph launch call's exit: the function's data taken back (before
// the graph has run: is it bound at submission?) unless `keep` (does a
// later ordinary launch, given null per-launch data, write into it?), the
// graph waited for, and the table printed.
void read_table(probe& p, function_table& t, bool keep) {
  t.armed = false;
  if (!keep) set_function_data(p, t.function, nullptr);
  p.lib->stream_synchronize(t.stream);
  print_table(p, t);
  if (keep) clear_table(p, t, t.stream);  // for whatever launches next
}

void on_probe_api(probe& p, const Sanitizer_CallbackData& d) {
  if (!p.tracker) return;
  if (d.callbackSite == SANITIZER_API_EXIT) {
    const bool keep = std::getenv("PROBE_GRAPH_KEEP") != nullptr;
    if (func_table.armed) {
      std::fprintf(stderr, "probe-graphs: function data: ");
      read_table(p, func_table, keep);
    }
    if (slot_table.armed) {
      std::fprintf(stderr, "probe-slot: second node's launch data table: ");
      read_table(p, slot_table, true);
      slot_table.armed = false;
    }
    for (std::size_t i = 0; i < node_tables_used; ++i) {
      std::fprintf(stderr, "probe-graphs: node %zu's table: ", i + 1);
      read_table(p, node_tables[i], false);
    }
    node_tables_used = 0;
    if (turn_node > 0) {
      ++turn_launches;
      turn_node = 0;
    }
    const auto id = p.tracker->launched();
    if (p.mode == "graphs" && id && node_was_measured) {
      std::fprintf(stderr, "probe-graphs: %s exit: measured launch id %llu\n", d.functionName,
                   static_cast<unsigned long long>(*id));
    }
    in_call = nullptr;
    node_was_measured = false;
    return;
  }
  if (in_call == nullptr) in_call = d.functionName;
  if (p.mode == "lazy" && !p.loaded.empty()) {
    std::lock_guard lock(p.mutex);
    for (CUmodule m : p.loaded) patch_for_probe(p, p.last_context, m);
    p.loaded.clear();
  }
  poll_footprints(p, false);
}

void census_begin(probe& p, const Sanitizer_LaunchData& d) {
  if (p.census_table == nullptr) {
    p.census_layout = sp::layout_for(2);  // 256 bitmap words: the census's cells
    p.lib->alloc(d.context, &p.census_table, p.census_layout.bytes);
    static sp::table_view v;
    v = sp::view_at(reinterpret_cast<std::uintptr_t>(p.census_table), p.census_layout);
    p.lib->memcpy_to_device(p.census_table, &v, sizeof v, d.hStream);
    p.lib->memset(static_cast<char*>(p.census_table) + p.census_layout.bits_offset, 0,
                  p.census_layout.bytes - p.census_layout.bits_offset, d.hStream);
  }
  p.census_stream = d.hStream;
  p.lib->set_launch_callback_data(d.hLaunch, d.function, d.hStream, p.census_table);
}

void SANITIZERAPI on_probe_callback(void* userdata, Sanitizer_CallbackDomain domain,
                              Sanitizer_CallbackId cbid, const void* data) {
  auto& p = *static_cast<probe*>(userdata);
  if (in_probe_callback) return;
  probe_busy guard;
  switch (domain) {
    case SANITIZER_CB_DOMAIN_DRIVER_API:
    case SANITIZER_CB_DOMAIN_RUNTIME_API:
      p.api_callbacks.fetch_add(1, std::memory_order_relaxed);
      if (p.release_after != 0 && domain == SANITIZER_CB_DOMAIN_DRIVER_API &&
          (cbid == SANITIZER_CBID_DRIVER_API_cuLaunchKernel ||
           cbid == SANITIZER_CBID_DRIVER_API_cuLaunchKernel_ptsz) &&
          static_cast<const Sanitizer_CallbackData*>(data)->callbackSite == SANITIZER_API_EXIT &&
          p.launch_exits.fetch_add(1, std::memory_order_relaxed) + 1 == p.release_after) {
        std::lock_guard lock(p.release_mutex);
        p.release_due = true;
        p.release_now.notify_one();
      }
      on_probe_api(p, *static_cast<const Sanitizer_CallbackData*>(data));
      return;
    case SANITIZER_CB_DOMAIN_RESOURCE:
      if (cbid == SANITIZER_CBID_RESOURCE_MODULE_LOADED && p.tracker) {
        const auto* m = static_cast<const Sanitizer_ResourceModuleData*>(data);
        if (p.mode == "lazy") {
          std::lock_guard lock(p.mutex);
          p.loaded.insert(m->module);
          p.last_context = m->context;
        } else if (p.mode == "census") {
          p.lib->add_patches(streamsan_footprint_patches, m->context);
          p.lib->patch_instructions(SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, m->module,
                                    "streamsan_global_access_census");
          p.lib->patch_module(m->module);
        } else {
          patch_for_probe(p, m->context, m->module);
        }
      }
      return;
    case SANITIZER_CB_DOMAIN_GRAPHS:
      if (cbid == SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN) {
        const auto* n = static_cast<const Sanitizer_GraphNodeLaunchData*>(data);
        std::fprintf(stderr,
                     "probe-graphs: node=%p type=%d exec=%p launch_id=%u upload=%u in_call=%s "
                     "function=%s stream=%p hstream=%p apiStream=%p module=%p hlaunch=%p ctx=%p\n",
                     static_cast<void*>(n->node), static_cast<int>(n->nodeType),
                     static_cast<void*>(n->graphExec), n->launchId, n->isGraphUpload,
                     in_call ? in_call : "-",
                     n->nodeType == CU_GRAPH_NODE_TYPE_KERNEL && n->launchData.functionName
                         ? n->launchData.functionName : "-",
                     static_cast<void*>(n->launchData.stream),
                     static_cast<void*>(n->launchData.hStream),
                     static_cast<void*>(n->launchData.apiStream),
                     static_cast<void*>(n->launchData.module),
                     static_cast<void*>(n->launchData.hLaunch),
                     static_cast<void*>(n->launchData.context));
        if (n->nodeType == CU_GRAPH_NODE_TYPE_KERNEL && p.tracker) {
          if (funcdata_turns()) {
            take_turn(p, n->launchData);
          } else if (funcdata_is("slot")) {
            take_slot(p, n->launchData);
          } else if (funcdata_is("fnull")) {
            set_function_data(p, n->launchData.function, nullptr);
          } else if (funcdata_is("nothing")) {
          } else if (per_node()) {
            if (node_tables.size() < 4) node_tables.resize(4);
            if (node_tables_used < node_tables.size()) {
              const auto r = arm_table(p, node_tables[node_tables_used++], n->launchData);
              std::fprintf(stderr, "probe-graphs: node %zu: sanitizerSetCallbackData -> %d\n",
                           node_tables_used, static_cast<int>(r));
            }
            node_was_measured = true;
          } else if (!node_was_measured && std::getenv("PROBE_GRAPH_FUNCDATA") != nullptr) {
            const auto r = arm_table(p, func_table, n->launchData);
            node_was_measured = true;
            std::fprintf(stderr, "probe-graphs: sanitizerSetCallbackData -> %d\n", static_cast<int>(r));
          } else if (!node_was_measured) {
            Sanitizer_LaunchData l = n->launchData;
            if (std::getenv("PROBE_GRAPH_STREAM") != nullptr) {  // the graph launch's stream
              l.hStream = l.hApiStream;
              l.stream = l.apiStream;
            }
            p.tracker->launch_begin(l, true);
            p.tracker->launch_end(l);
            node_was_measured = true;
          } else {  // launch_begin would forget the first node's table
            p.lib->set_launch_callback_data(n->launchData.hLaunch, n->launchData.function,
                                            n->launchData.hStream, nullptr);
          }
        }
      } else if (cbid == SANITIZER_CBID_GRAPHS_LAUNCH_BEGIN || cbid == SANITIZER_CBID_GRAPHS_LAUNCH_END) {
        const auto* g = static_cast<const Sanitizer_GraphLaunchData*>(data);
        std::fprintf(stderr, "probe-graphs: graph launch %s exec=%p stream=%p in_call=%s\n",
                     cbid == SANITIZER_CBID_GRAPHS_LAUNCH_BEGIN ? "begin" : "end",
                     static_cast<void*>(g->graphExec), static_cast<void*>(g->stream),
                     in_call ? in_call : "-");
      }
      return;
    case SANITIZER_CB_DOMAIN_LAUNCH: {
      const auto* l = static_cast<const Sanitizer_LaunchData*>(data);
      if (cbid == SANITIZER_CBID_LAUNCH_BEGIN) {
        p.launches.fetch_add(1, std::memory_order_relaxed);
        if (p.mode == "census") {
          census_begin(p, *l);
        } else if (p.tracker) {
          // PROBE_ORDINARY_NULL (graphs mode): ordinary launches get null
          // per-launch data (does it hide the function's data?).
          const bool null_data = p.mode == "graphs" && std::getenv("PROBE_ORDINARY_NULL") != nullptr;
          p.tracker->launch_begin(*l, p.mode != "patch-null" && !null_data);
        }
      } else if (cbid == SANITIZER_CBID_LAUNCH_END && p.tracker) {
        p.tracker->launch_end(*l);
      }
      return;
    }
    default:
      return;
  }
}

void probe_at_exit() {
  auto& p = the_probe();
  probe_busy guard;
  poll_footprints(p, true);
  if (std::getenv("PROBE_HANDOFF") != nullptr) {
    std::fprintf(stderr, "probe: CUPTI callbacks before the handoff=%llu\n",
                 probe_cupti_callbacks());
  }
  if (func_table.device != nullptr && std::getenv("PROBE_GRAPH_KEEP") != nullptr) {
    std::fprintf(stderr, "probe-graphs: function data at exit: ");
    print_table(p, func_table);
  }
  if (p.census_table != nullptr) {
    std::vector<std::uint32_t> cells(256);
    p.lib->memcpy_to_host(cells.data(),
                          static_cast<char*>(p.census_table) + p.census_layout.bits_offset,
                          cells.size() * 4, p.census_stream);
    for (unsigned c = 0; c < cells.size(); ++c) {
      if (cells[c] != 0) {
        std::fprintf(stderr, "census flags=0x%x new_value=%s size_index=%u count=%u\n", c >> 4,
                     (c >> 3) & 1 ? "yes" : "null", c & 7, cells[c]);
      }
    }
  }
  const auto s = p.tracker ? p.tracker->stats() : sa::tracker_stats{};
  std::fprintf(stderr,
               "probe: mode=%s api_callbacks=%llu launches=%llu measured=%llu incomplete=%llu "
               "failed=%llu pages=%llu fragmented=%llu read_back=%llu waits=%llu patched=%llu\n",
               p.mode.c_str(), static_cast<unsigned long long>(p.api_callbacks.load()),
               static_cast<unsigned long long>(p.launches.load()),
               static_cast<unsigned long long>(s.measured),
               static_cast<unsigned long long>(s.incomplete),
               static_cast<unsigned long long>(s.failed), static_cast<unsigned long long>(s.pages),
               static_cast<unsigned long long>(s.fragmented_pages),
               static_cast<unsigned long long>(s.bytes_read_back),
               static_cast<unsigned long long>(s.waits),
               static_cast<unsigned long long>(s.modules_patched));
  if (p.release_after != 0) {
    std::fprintf(stderr, "probe: release after=%llu cupti_callbacks=%llu\n", p.release_after,
                 probe_cupti_callbacks());
  }
}

void subscribe_sanitizer();

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
  const bool patches = p.mode == "patch-null" || p.mode == "track" || p.mode == "lazy" ||
                       p.mode == "census" || p.mode == "graphs";
  if (patches) {
    const auto driver = sa::resolve_tracker_driver();
    if (!driver) {
      std::fprintf(stderr, "probe: driver entry points missing\n");
      return 0;
    }
    sa::tracker_options options;
    if (const char* fn = std::getenv("PROBE_ACCESS_FN")) options.global_access_function = fn;
    // A kernel's first table (the tracker grows it 4 times after each
    // overflow): the triad's 49,152 pages overflow the default 256 for its
    // first launches, which a pricing run should not count.
    if (const char* slots = std::getenv("PROBE_INITIAL_SLOTS")) {
      options.initial_slots = static_cast<std::uint32_t>(std::strtoul(slots, nullptr, 10));
    }
    p.tracker = std::make_unique<sa::launch_tracker>(*p.lib, *driver, options);
  }
  std::atexit(probe_at_exit);
  if (const char* after = std::getenv("PROBE_HANDOFF")) {
    char* end = nullptr;
    const unsigned long long launches = std::strtoull(after, &end, 10);
    if (launches == 0 || end == after || *end != '\0') {
      std::fprintf(stderr, "probe: PROBE_HANDOFF=%s: expected a number of launches > 0\n", after);
      return 0;
    }
    if (!probe_cupti_first(launches, subscribe_sanitizer)) {
      std::fprintf(stderr, "probe: cannot subscribe CUPTI\n");
      return 0;
    }
    std::fprintf(stderr, "probe: CUPTI first, mode %s after %s launches\n", p.mode.c_str(), after);
    return 1;
  }
  subscribe_sanitizer();
  return 1;
}

namespace {

// PROBE_RELEASE: unsubscribing is not done inside a callback of the
// subscriber; a thread of the probe does it once the launch count is met.
void start_releaser(probe& p, const char* after) {
  char* end = nullptr;
  const unsigned long long launches = std::strtoull(after, &end, 10);
  if (launches == 0 || end == after || *end != '\0') {
    std::fprintf(stderr,
                 "probe: PROBE_RELEASE=%s: expected a number of launches > 0; not released\n",
                 after);
    return;
  }
  const char* to = std::getenv("PROBE_RELEASE_TO");
  if (to != nullptr && std::string_view(to) != "cupti") {
    std::fprintf(stderr, "probe: PROBE_RELEASE_TO=%s: expected cupti; not released\n", to);
    return;
  }
  p.release_after = launches;
  const bool to_cupti = to != nullptr;
  std::thread([&p, to_cupti] {
    std::unique_lock lock(p.release_mutex);
    p.release_now.wait(lock, [&] { return p.release_due; });
    lock.unlock();
    const auto r = p.lib->unsubscribe(p.handle);
    std::fprintf(stderr, "probe: Sanitizer API unsubscribed after %llu launches: %d\n",
                 p.release_after, static_cast<int>(r));
    if (to_cupti) {
      std::fprintf(stderr, "probe: CUPTI subscribed after it: %d\n", probe_cupti_launches_only());
    }
  }).detach();
}

void subscribe_sanitizer() {
  auto& p = the_probe();
  const bool patches = p.tracker != nullptr;
  Sanitizer_SubscriberHandle handle;
  p.lib->subscribe(&handle, on_probe_callback, &p);
  p.handle = handle;
  if (const char* after = std::getenv("PROBE_RELEASE")) start_releaser(p, after);
  if (p.mode == "api-launch") {
    // Note [The floor is the callbacks we keep]
    // streamsan's source switches off the runtime's launch callbacks and
    // every call it does not model, and the launch domain while nothing is
    // patched. A subscriber to both whole domains prices callbacks that
    // streamsan never takes; this one keeps what a launch-bound loop's
    // steady state still takes.
    for (const auto cbid : {SANITIZER_CBID_DRIVER_API_cuLaunchKernel,
                            SANITIZER_CBID_DRIVER_API_cuLaunchKernel_ptsz,
                            SANITIZER_CBID_DRIVER_API_cuLaunchKernelEx,
                            SANITIZER_CBID_DRIVER_API_cuLaunchKernelEx_ptsz,
                            SANITIZER_CBID_DRIVER_API_cuEventRecord,
                            SANITIZER_CBID_DRIVER_API_cuEventRecord_ptsz,
                            SANITIZER_CBID_DRIVER_API_cuStreamWaitEvent,
                            SANITIZER_CBID_DRIVER_API_cuStreamWaitEvent_ptsz}) {
      p.lib->enable_callback(1, handle, SANITIZER_CB_DOMAIN_DRIVER_API, cbid);
    }
    std::fprintf(stderr, "probe: %s, mode %s\n", p.lib->path.c_str(), p.mode.c_str());
    return;
  }
  p.lib->enable_domain(1, handle, SANITIZER_CB_DOMAIN_DRIVER_API);
  p.lib->enable_domain(1, handle, SANITIZER_CB_DOMAIN_RUNTIME_API);
  if (p.mode != "api") p.lib->enable_domain(1, handle, SANITIZER_CB_DOMAIN_LAUNCH);
  if (p.mode == "graphs") p.lib->enable_domain(1, handle, SANITIZER_CB_DOMAIN_GRAPHS);
  if (patches) {
    p.lib->enable_callback(1, handle, SANITIZER_CB_DOMAIN_RESOURCE,
                           SANITIZER_CBID_RESOURCE_MODULE_LOADED);
  }
  std::fprintf(stderr, "probe: %s, mode %s\n", p.lib->path.c_str(), p.mode.c_str());
}

}  // namespace
