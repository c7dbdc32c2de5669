// A stand-in for the CUDA driver's entry points the Sanitizer API source
// calls itself (see fake_cuda_driver.h).
#include "tests/inject/fake_cuda_driver.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

struct event_state {
  bool complete = true;
  CUcontext ctx = nullptr;  // current at its creation
  int generation = 0;       // of ctx then: a destroyed context's events die with it
};
struct graph_node_state {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUfunction function = nullptr;
  CUDA_MEMSET_NODE_PARAMS memset{};
  CUgraph child = nullptr;
};
struct graph_state {
  std::vector<CUgraphNode> nodes;
  std::vector<std::pair<CUgraphNode, CUgraphNode>> edges;
  bool programmatic_edges = false;  // edge data that is not the default
};
struct state {
  std::mutex mutex;
  std::map<CUgraph, graph_state> graphs;
  std::map<CUgraphNode, graph_node_state> nodes;
  bool hold = false;
  std::map<CUevent, event_state> events;
  std::map<CUfunction, std::pair<CUmodule, std::string>> functions;
  std::set<CUstream> capturing;
  std::set<CUstream> busy;
  int stream_queries = 0;
  std::map<CUstream, int> draining;  // queries still answered NOT_READY
  // fake_cuda_complete_events_when_a_stream_drains
  bool complete_on_drain = false;
  std::map<void*, std::pair<std::size_t, CUcontext>> registered;  // cuMemHostRegister
  bool refuse_register = false;
  int unregistered = 0;
  CUcontext current = nullptr;  // pushed by cuCtxPushCurrent
  std::set<CUcontext> destroyed;  // fake_cuda_destroy_context, until made again
  std::map<CUcontext, int> generations;  // destructions of each context
  int destroyed_context_uses = 0;
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
  s().events[*e] = {true, s().current, s().generations[s().current]};
  return CUDA_SUCCESS;
}
namespace {
// An event of a context destroyed since: counted as a destroyed context's use.
bool event_outlived_its_context(CUevent e) {
  const auto it = s().events.find(e);
  if (it == s().events.end() || it->second.ctx == nullptr) return false;
  if (s().generations[it->second.ctx] == it->second.generation) return false;
  ++s().destroyed_context_uses;
  return true;
}
}  // namespace
FAKE CUresult cuEventRecord(CUevent e, CUstream) {
  std::lock_guard lock(s().mutex);
  if (event_outlived_its_context(e)) return CUDA_ERROR_INVALID_HANDLE;
  s().events[e].complete = !s().hold;
  return CUDA_SUCCESS;
}
// Held events are work the GPU has not run yet; once the hold ends, it has.
FAKE CUresult cuEventQuery(CUevent e) {
  std::lock_guard lock(s().mutex);
  return s().events[e].complete || !s().hold ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
FAKE CUresult cuEventSynchronize(CUevent e) {
  std::lock_guard lock(s().mutex);
  s().events[e].complete = true;  // the wait ends once the work has run
  return CUDA_SUCCESS;
}
FAKE CUresult cuEventDestroy_v2(CUevent e) {
  std::lock_guard lock(s().mutex);
  if (event_outlived_its_context(e)) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}
FAKE CUresult cuStreamCreate(CUstream* stream, unsigned int) {
  std::lock_guard lock(s().mutex);
  *stream = reinterpret_cast<CUstream>(s().next += 16);
  return CUDA_SUCCESS;
}
// A destroyed context's handle is counted when used: the driver may crash on
// one (a freed stream's did, Note [A module changes only while none of its
// kernels runs]).
FAKE CUresult cuCtxPushCurrent_v2(CUcontext c) {
  std::lock_guard lock(s().mutex);
  if (s().destroyed.contains(c)) {
    ++s().destroyed_context_uses;
    return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  }
  s().current = c;
  return CUDA_SUCCESS;
}
FAKE CUresult cuCtxPopCurrent_v2(CUcontext* c) {
  std::lock_guard lock(s().mutex);
  *c = std::exchange(s().current, nullptr);
  return CUDA_SUCCESS;
}
// Registered ranges must not overlap, as in the driver
// (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED).
FAKE CUresult cuMemHostRegister_v2(void* p, size_t bytes, unsigned int) {
  std::lock_guard lock(s().mutex);
  if (s().refuse_register) return CUDA_ERROR_NOT_PERMITTED;
  if (s().current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  auto* const begin = static_cast<char*>(p);
  for (const auto& [q, r] : s().registered) {
    if (begin < static_cast<char*>(q) + r.first && static_cast<char*>(q) < begin + bytes) {
      return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
  }
  s().registered[p] = {bytes, s().current};
  return CUDA_SUCCESS;
}
FAKE CUresult cuMemHostUnregister(void* p) {
  std::lock_guard lock(s().mutex);
  if (s().registered.erase(p) == 0) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  ++s().unregistered;
  return CUDA_SUCCESS;
}
FAKE bool fake_cuda_host_registered(const void* p, size_t bytes) {
  std::lock_guard lock(s().mutex);
  for (const auto& [q, r] : s().registered) {
    if (static_cast<const char*>(p) >= static_cast<const char*>(q) &&
        static_cast<const char*>(p) + bytes <= static_cast<const char*>(q) + r.first) {
      return true;
    }
  }
  return false;
}
FAKE size_t fake_cuda_host_registrations() {
  std::lock_guard lock(s().mutex);
  return s().registered.size();
}
FAKE int fake_cuda_host_unregistrations() {
  std::lock_guard lock(s().mutex);
  return s().unregistered;
}
FAKE void fake_cuda_refuse_host_register(bool refuse) {
  std::lock_guard lock(s().mutex);
  s().refuse_register = refuse;
}
// The context was destroyed: the driver forgets what was registered in it.
FAKE void fake_cuda_destroy_context(CUcontext c) {
  std::lock_guard lock(s().mutex);
  std::erase_if(s().registered, [c](const auto& entry) { return entry.second.second == c; });
  s().destroyed.insert(c);
  ++s().generations[c];
}
FAKE void fake_cuda_create_context(CUcontext c) {
  std::lock_guard lock(s().mutex);
  s().destroyed.erase(c);
}
FAKE int fake_cuda_destroyed_context_uses() {
  std::lock_guard lock(s().mutex);
  return s().destroyed_context_uses;
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
  if (const auto it = s().draining.find(stream); it != s().draining.end() && it->second > 0) {
    --it->second;
    return CUDA_ERROR_NOT_READY;
  }
  if (s().busy.count(stream)) return CUDA_ERROR_NOT_READY;
  if (s().complete_on_drain) {
    for (auto& [e, st] : s().events) st.complete = true;
  }
  return CUDA_SUCCESS;
}

FAKE void fake_cuda_complete_events_when_a_stream_drains(bool complete) {
  std::lock_guard lock(s().mutex);
  s().complete_on_drain = complete;
}

FAKE void fake_cuda_set_stream_busy_for(CUstream stream, int queries) {
  std::lock_guard lock(s().mutex);
  s().draining[stream] = queries;
}

FAKE int fake_cuda_stream_queries() {
  std::lock_guard lock(s().mutex);
  return s().stream_queries;
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

// ---- graphs, and the entry points cuda_driver_queries resolves ----

FAKE CUgraph fake_cuda_graph_create() {
  std::lock_guard lock(s().mutex);
  const auto g = reinterpret_cast<CUgraph>(s().next += 16);
  s().graphs[g];
  return g;
}
FAKE CUgraphNode fake_cuda_graph_add(CUgraph graph, CUgraphNodeType type, const CUgraphNode* deps,
                                     size_t dep_count) {
  std::lock_guard lock(s().mutex);
  const auto n = reinterpret_cast<CUgraphNode>(s().next += 16);
  s().nodes[n].type = type;
  auto& g = s().graphs[graph];
  g.nodes.push_back(n);
  for (size_t i = 0; i < dep_count; ++i) g.edges.emplace_back(deps[i], n);
  return n;
}
FAKE void fake_cuda_graph_set_kernel(CUgraphNode node, CUfunction function) {
  std::lock_guard lock(s().mutex);
  s().nodes[node].function = function;
}
FAKE void fake_cuda_graph_set_memset(CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* params) {
  std::lock_guard lock(s().mutex);
  s().nodes[node].memset = *params;
}
FAKE void fake_cuda_graph_set_child(CUgraphNode node, CUgraph child) {
  std::lock_guard lock(s().mutex);
  s().nodes[node].child = child;
}

namespace {

// The node `node` of `type`, or null.
graph_node_state* node_of(CUgraphNode node, CUgraphNodeType type) {
  const auto it = s().nodes.find(node);
  return it != s().nodes.end() && it->second.type == type ? &it->second : nullptr;
}

}  // namespace

FAKE CUresult cuGraphGetNodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  std::lock_guard lock(s().mutex);
  const auto it = s().graphs.find(graph);
  if (it == s().graphs.end()) return CUDA_ERROR_INVALID_VALUE;
  const auto& all = it->second.nodes;
  if (nodes != nullptr) std::copy_n(all.begin(), std::min(*count, all.size()), nodes);
  *count = all.size();
  return CUDA_SUCCESS;
}
FAKE CUresult cuGraphGetEdges(CUgraph graph, CUgraphNode* from, CUgraphNode* to,
                              CUgraphEdgeData* data, size_t* count) {
  std::lock_guard lock(s().mutex);
  const auto it = s().graphs.find(graph);
  if (it == s().graphs.end()) return CUDA_ERROR_INVALID_VALUE;
  const auto& edges = it->second.edges;
  // As the driver: edges whose data is not the default cannot be listed
  // without it.
  if (from != nullptr && data == nullptr && it->second.programmatic_edges && !edges.empty()) {
    return CUDA_ERROR_LOSSY_QUERY;
  }
  if (from != nullptr) {
    for (size_t i = 0; i < std::min(*count, edges.size()); ++i) {
      from[i] = edges[i].first;
      to[i] = edges[i].second;
      if (data != nullptr) {
        data[i] = CUgraphEdgeData{};
        if (it->second.programmatic_edges) {
          data[i].from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
          data[i].type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
        }
      }
    }
  }
  *count = edges.size();
  return CUDA_SUCCESS;
}
FAKE CUresult cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  std::lock_guard lock(s().mutex);
  const auto it = s().nodes.find(node);
  if (it == s().nodes.end()) return CUDA_ERROR_INVALID_VALUE;
  *type = it->second.type;
  return CUDA_SUCCESS;
}
FAKE CUresult cuGraphKernelNodeGetParams(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* p) {
  std::lock_guard lock(s().mutex);
  const auto* n = node_of(node, CU_GRAPH_NODE_TYPE_KERNEL);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memset(p, 0, sizeof *p);
  p->func = n->function;
  return CUDA_SUCCESS;
}
FAKE CUresult cuGraphMemsetNodeGetParams(CUgraphNode node, CUDA_MEMSET_NODE_PARAMS* p) {
  std::lock_guard lock(s().mutex);
  const auto* n = node_of(node, CU_GRAPH_NODE_TYPE_MEMSET);
  if (n == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *p = n->memset;
  return CUDA_SUCCESS;
}
FAKE CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode node, CUgraph* child) {
  std::lock_guard lock(s().mutex);
  const auto* n = node_of(node, CU_GRAPH_NODE_TYPE_GRAPH);
  if (n == nullptr || n->child == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *child = n->child;
  return CUDA_SUCCESS;
}

namespace {

// What the graph tests do not need: resolved (the library requires them),
// never answered.
CUresult unsupported_ctx_get_device(CUdevice*) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult unsupported_stream_get_flags(CUstream, unsigned int*) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult unsupported_stream_get_priority(CUstream, int*) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult unsupported_kernel_get_name(const char**, CUkernel) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult unsupported_kernel_get_param_info(CUkernel, size_t, size_t*, size_t*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult unsupported_func_get_param_info(CUfunction, size_t, size_t*, size_t*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult unsupported_memcpy_node(CUgraphNode, CUDA_MEMCPY3D*) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult unsupported_host_node(CUgraphNode, CUDA_HOST_NODE_PARAMS*) {
  return CUDA_ERROR_NOT_SUPPORTED;
}
CUresult unsupported_event_node(CUgraphNode, CUevent*) { return CUDA_ERROR_NOT_SUPPORTED; }
CUresult unsupported_pointer_attribute(void*, CUpointer_attribute, CUdeviceptr) {
  return CUDA_ERROR_NOT_SUPPORTED;
}

const std::map<std::string, void*, std::less<>>& entry_points() {
  static const auto* table = new std::map<std::string, void*, std::less<>>{
      {"cuCtxGetDevice", reinterpret_cast<void*>(&unsupported_ctx_get_device)},
      {"cuStreamGetFlags", reinterpret_cast<void*>(&unsupported_stream_get_flags)},
      {"cuStreamGetPriority", reinterpret_cast<void*>(&unsupported_stream_get_priority)},
      {"cuKernelGetName", reinterpret_cast<void*>(&unsupported_kernel_get_name)},
      {"cuKernelGetParamInfo", reinterpret_cast<void*>(&unsupported_kernel_get_param_info)},
      {"cuFuncGetName", reinterpret_cast<void*>(&cuFuncGetName)},
      {"cuFuncGetParamInfo", reinterpret_cast<void*>(&unsupported_func_get_param_info)},
      {"cuGraphGetNodes", reinterpret_cast<void*>(&cuGraphGetNodes)},
      {"cuGraphGetEdges", reinterpret_cast<void*>(&cuGraphGetEdges)},
      {"cuGraphNodeGetType", reinterpret_cast<void*>(&cuGraphNodeGetType)},
      {"cuGraphKernelNodeGetParams", reinterpret_cast<void*>(&cuGraphKernelNodeGetParams)},
      {"cuGraphMemcpyNodeGetParams", reinterpret_cast<void*>(&unsupported_memcpy_node)},
      {"cuGraphMemsetNodeGetParams", reinterpret_cast<void*>(&cuGraphMemsetNodeGetParams)},
      {"cuGraphHostNodeGetParams", reinterpret_cast<void*>(&unsupported_host_node)},
      {"cuGraphChildGraphNodeGetGraph", reinterpret_cast<void*>(&cuGraphChildGraphNodeGetGraph)},
      {"cuGraphEventRecordNodeGetEvent", reinterpret_cast<void*>(&unsupported_event_node)},
      {"cuGraphEventWaitNodeGetEvent", reinterpret_cast<void*>(&unsupported_event_node)},
      {"cuPointerGetAttribute", reinterpret_cast<void*>(&unsupported_pointer_attribute)},
  };
  return *table;
}

}  // namespace

FAKE CUresult cuGetProcAddress(const char* symbol, void** pfn, int, cuuint64_t,
                               CUdriverProcAddressQueryResult* status) {
  const auto& table = entry_points();
  const auto it = table.find(std::string_view(symbol));
  *pfn = it != table.end() ? it->second : nullptr;
  if (status != nullptr) {
    *status = it != table.end() ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  return it != table.end() ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

FAKE void fake_cuda_graph_mark_edges_programmatic(CUgraph graph) {
  std::lock_guard lock(s().mutex);
  s().graphs[graph].programmatic_edges = true;
}
