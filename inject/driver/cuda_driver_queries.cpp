#include "inject/driver/cuda_driver_queries.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <stdexcept>
#include <vector>

#include "inject/model/copy_regions.h"
#include "inject/stack/symbol_names.h"

namespace streamsan::injection {

// Each entry point with the exact ABI version its PFN type names.
struct cuda_driver_queries::entry_points {
  PFN_cuCtxGetDevice_v2000 ctx_get_device = nullptr;
  PFN_cuStreamGetFlags_v5050 stream_get_flags = nullptr;
  PFN_cuStreamGetPriority_v5050 stream_get_priority = nullptr;
  PFN_cuStreamGetDevice_v12080 stream_get_device = nullptr;  // optional
  PFN_cuKernelGetName_v12030 kernel_get_name = nullptr;
  PFN_cuKernelGetParamInfo_v12040 kernel_get_param_info = nullptr;
  PFN_cuFuncGetName_v12030 func_get_name = nullptr;
  PFN_cuFuncGetParamInfo_v12040 func_get_param_info = nullptr;
  PFN_cuGraphGetNodes_v10000 graph_get_nodes = nullptr;
  PFN_cuGraphGetEdges_v12030 graph_get_edges = nullptr;
  PFN_cuGraphNodeGetType_v10000 node_get_type = nullptr;
  PFN_cuGraphKernelNodeGetParams_v12000 kernel_node_get_params = nullptr;
  PFN_cuGraphMemcpyNodeGetParams_v10000 memcpy_node_get_params = nullptr;
  PFN_cuGraphMemsetNodeGetParams_v10000 memset_node_get_params = nullptr;
  PFN_cuGraphHostNodeGetParams_v10000 host_node_get_params = nullptr;
  PFN_cuGraphChildGraphNodeGetGraph_v10000 child_graph_get_graph = nullptr;
  PFN_cuGraphEventRecordNodeGetEvent_v11010 event_record_node_get_event = nullptr;
  PFN_cuGraphEventWaitNodeGetEvent_v11010 event_wait_node_get_event = nullptr;
  PFN_cuGraphMemAllocNodeGetParams_v11040 mem_alloc_node_get_params = nullptr;  // optional
  PFN_cuGraphMemFreeNodeGetParams_v11040 mem_free_node_get_params = nullptr;    // optional
  PFN_cuPointerGetAttribute_v4000 pointer_get_attribute = nullptr;
  PFN_cuStreamGetCaptureInfo_v12030 stream_get_capture_info = nullptr;  // optional
};

namespace {

PFN_cuGetProcAddress_v12000 find_get_proc_address() {
  // The driver loaded us, so it is in the process already.
  void* driver = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
  if (driver == nullptr) throw std::runtime_error("libcuda.so.1 is not loaded in this process");
  auto* fn = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(driver, "cuGetProcAddress_v2"));
  if (fn == nullptr) throw std::runtime_error("the CUDA driver has no cuGetProcAddress_v2");
  return fn;
}

template <class Fn>
void resolve_entry(PFN_cuGetProcAddress_v12000 get, const char* name, int version, Fn& out,
             bool required = true) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (get(name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS ||
      p == nullptr) {
    if (required) {
      throw std::runtime_error(std::string("the CUDA driver has no ") + name + " (version " +
                               std::to_string(version) + ")");
    }
    return;
  }
  out = reinterpret_cast<Fn>(p);
}

}  // namespace

void* driver_entry_point(const char* name, int version) noexcept {
  try {
    void* p = nullptr;
    resolve_entry(find_get_proc_address(), name, version, p, /*required=*/false);
    return p;
  } catch (const std::exception&) {
    return nullptr;
  }
}

void cuda_driver_queries::resolve() {
  std::call_once(resolve_once_, [this] {
    const auto get = find_get_proc_address();
    auto* f = new entry_points;  // lives as long as the process
    resolve_entry(get, "cuCtxGetDevice", 2000, f->ctx_get_device);
    resolve_entry(get, "cuStreamGetFlags", 5050, f->stream_get_flags);
    resolve_entry(get, "cuStreamGetPriority", 5050, f->stream_get_priority);
    resolve_entry(get, "cuStreamGetDevice", 12080, f->stream_get_device, /*required=*/false);
    resolve_entry(get, "cuKernelGetName", 12030, f->kernel_get_name);
    resolve_entry(get, "cuKernelGetParamInfo", 12040, f->kernel_get_param_info);
    resolve_entry(get, "cuFuncGetName", 12030, f->func_get_name);
    resolve_entry(get, "cuFuncGetParamInfo", 12040, f->func_get_param_info);
    resolve_entry(get, "cuGraphGetNodes", 10000, f->graph_get_nodes);
    resolve_entry(get, "cuGraphGetEdges", 12030, f->graph_get_edges);
    resolve_entry(get, "cuGraphNodeGetType", 10000, f->node_get_type);
    resolve_entry(get, "cuGraphKernelNodeGetParams", 12000, f->kernel_node_get_params);
    resolve_entry(get, "cuGraphMemcpyNodeGetParams", 10000, f->memcpy_node_get_params);
    resolve_entry(get, "cuGraphMemsetNodeGetParams", 10000, f->memset_node_get_params);
    resolve_entry(get, "cuGraphHostNodeGetParams", 10000, f->host_node_get_params);
    resolve_entry(get, "cuGraphChildGraphNodeGetGraph", 10000, f->child_graph_get_graph);
    resolve_entry(get, "cuGraphEventRecordNodeGetEvent", 11010, f->event_record_node_get_event);
    resolve_entry(get, "cuGraphEventWaitNodeGetEvent", 11010, f->event_wait_node_get_event);
    resolve_entry(get, "cuGraphMemAllocNodeGetParams", 11040, f->mem_alloc_node_get_params,
                  /*required=*/false);
    resolve_entry(get, "cuGraphMemFreeNodeGetParams", 11040, f->mem_free_node_get_params,
                  /*required=*/false);
    resolve_entry(get, "cuPointerGetAttribute", 4000, f->pointer_get_attribute);
    resolve_entry(get, "cuStreamGetCaptureInfo", 12030, f->stream_get_capture_info,
                  /*required=*/false);
    fn_ = f;
  });
  if (fn_ == nullptr) throw std::runtime_error("the CUDA driver's entry points are unresolved");
}

const cuda_driver_queries::entry_points& cuda_driver_queries::fn() {
  if (fn_ == nullptr) resolve();
  return *fn_;
}

std::optional<capture_frontier> cuda_driver_queries::capture_frontier_of(std::uintptr_t stream) {
  const auto get_info = fn().stream_get_capture_info;
  if (get_info == nullptr) return std::nullopt;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph graph = nullptr;
  const CUgraphNode* nodes = nullptr;
  const CUgraphEdgeData* edges = nullptr;  // asked for, or annotated edges fail the query
  std::size_t count = 0;
  if (get_info(reinterpret_cast<CUstream>(stream), &status, nullptr, &graph, &nodes, &edges,
               &count) != CUDA_SUCCESS ||
      status != CU_STREAM_CAPTURE_STATUS_ACTIVE || graph == nullptr) {
    return std::nullopt;
  }
  capture_frontier f;
  f.graph = reinterpret_cast<std::uintptr_t>(graph);
  f.nodes.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    f.nodes.push_back(reinterpret_cast<std::uintptr_t>(nodes[i]));
  }
  return f;
}

std::int32_t cuda_driver_queries::current_device() {
  CUdevice d = 0;
  if (fn().ctx_get_device(&d) != CUDA_SUCCESS) return 0;
  return static_cast<std::int32_t>(d);
}

std::optional<stream_description> cuda_driver_queries::describe_stream(std::uintptr_t stream) {
  const auto s = reinterpret_cast<CUstream>(stream);
  stream_description d;
  unsigned flags = 0;
  int priority = 0;
  if (fn().stream_get_flags(s, &flags) != CUDA_SUCCESS) return std::nullopt;
  fn().stream_get_priority(s, &priority);
  d.flags = flags;
  d.priority = priority;
  CUdevice dev = 0;
  d.device = fn().stream_get_device && fn().stream_get_device(s, &dev) == CUDA_SUCCESS
                 ? static_cast<std::int32_t>(dev)
                 : current_device();
  return d;
}

// Note [CUkernel or CUfunction]
// A launch names its kernel by a CUfunction (cuModuleGetFunction) or, since
// CUDA 12 and always for launches made by the CUDA runtime, by a CUkernel
// passed in the same CUfunction slot. The driver checks handle types: the
// CUkernel calls fail cleanly with INVALID_HANDLE on a CUfunction and vice
// versa, so the kernel calls are tried first and the function calls second.
std::optional<kernel_description> cuda_driver_queries::describe_kernel(std::uintptr_t kernel) {
  kernel_description d;
  const char* name = nullptr;
  const auto as_kernel = reinterpret_cast<CUkernel>(kernel);
  const auto as_function = reinterpret_cast<CUfunction>(kernel);
  bool is_kernel = fn().kernel_get_name(&name, as_kernel) == CUDA_SUCCESS;
  if (!is_kernel && fn().func_get_name(&name, as_function) != CUDA_SUCCESS) return std::nullopt;
  d.mangled_name = name ? name : "";
  for (std::size_t i = 0; i < 4096; ++i) {
    std::size_t offset = 0, size = 0;
    const CUresult r = is_kernel ? fn().kernel_get_param_info(as_kernel, i, &offset, &size)
                                 : fn().func_get_param_info(as_function, i, &offset, &size);
    if (r != CUDA_SUCCESS) {
      // INVALID_VALUE = past the last parameter: the layout is complete.
      d.layout_known = r == CUDA_ERROR_INVALID_VALUE;
      break;
    }
    d.params.push_back(param_layout{static_cast<std::uint32_t>(offset),
                                    static_cast<std::uint32_t>(size)});
  }
  return d;
}

namespace {

// Both getters have this type (PFN_cuGraphEvent{Record,Wait}NodeGetEvent).
void read_event_node(CUresult (*get)(CUgraphNode, CUevent*), CUgraphNode node,
                     raw_node_kind kind, raw_graph_node& n) {
  CUevent e = nullptr;
  if (get(node, &e) != CUDA_SUCCESS || e == nullptr) {
    n.what = kind == raw_node_kind::event_wait ? "event wait node (event unreadable)"
                                               : "event record node (event unreadable)";
    return;
  }
  n.kind = kind;
  n.event = reinterpret_cast<std::uintptr_t>(e);
}

// Note [Graph allocations] (sanitizer/engine/graph_rules.cpp): an alloc
// node's address and size, a free node's address. Device memory only: a
// graph allocation placed elsewhere is listed.
void read_mem_alloc_node(PFN_cuGraphMemAllocNodeGetParams_v11040 get, CUgraphNode node,
                         raw_graph_node& n) {
  CUDA_MEM_ALLOC_NODE_PARAMS p{};
  if (get == nullptr || get(node, &p) != CUDA_SUCCESS) {
    n.what = "memory allocation node (parameters unreadable)";
    return;
  }
  if (p.poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    n.what = "memory allocation node (not in device memory)";
    return;
  }
  n.kind = raw_node_kind::mem_alloc;
  n.dst = memory_region{static_cast<std::uint64_t>(p.dptr), p.bytesize, memory_side::device};
  n.device = p.poolProps.location.id;
}

void read_mem_free_node(PFN_cuGraphMemFreeNodeGetParams_v11040 get, CUgraphNode node,
                        raw_graph_node& n) {
  CUdeviceptr dptr = 0;
  if (get == nullptr || get(node, &dptr) != CUDA_SUCCESS) {
    n.what = "memory free node (parameters unreadable)";
    return;
  }
  n.kind = raw_node_kind::mem_free;
  n.dst = memory_region{static_cast<std::uint64_t>(dptr), 0, memory_side::device};
}

void read_kernel_node(PFN_cuGraphKernelNodeGetParams_v12000 get, CUgraphNode node,
                      raw_graph_node& n) {
  CUDA_KERNEL_NODE_PARAMS p{};
  if (get(node, &p) != CUDA_SUCCESS) {
    n.what = "kernel (parameters unreadable)";
    return;
  }
  n.kind = raw_node_kind::kernel;
  n.kernel = p.func != nullptr ? reinterpret_cast<std::uintptr_t>(p.func)
                               : reinterpret_cast<std::uintptr_t>(p.kern);
  n.args = kernel_arguments::from_launch(p.kernelParams, p.extra);
}

void read_memcpy_node(PFN_cuGraphMemcpyNodeGetParams_v10000 get, CUgraphNode node,
                      raw_graph_node& n) {
  CUDA_MEMCPY3D p{};
  if (get(node, &p) != CUDA_SUCCESS) {
    n.what = "memcpy (parameters unreadable)";
    return;
  }
  n.kind = raw_node_kind::memcpy;
  n.src = region_of(p, copy_side::source);
  n.dst = region_of(p, copy_side::destination);
}

void read_memset_node(PFN_cuGraphMemsetNodeGetParams_v10000 get, CUgraphNode node,
                      raw_graph_node& n) {
  CUDA_MEMSET_NODE_PARAMS p{};
  if (get(node, &p) != CUDA_SUCCESS) {
    n.what = "memset (parameters unreadable)";
    return;
  }
  n.kind = raw_node_kind::memset;
  n.dst = memory_region{p.dst, pitched_extent(p.width * p.elementSize, p.height, p.pitch),
                        memory_side::unknown};
}

void read_host_node(PFN_cuGraphHostNodeGetParams_v10000 get, CUgraphNode node, raw_graph_node& n) {
  CUDA_HOST_NODE_PARAMS p{};
  n.kind = raw_node_kind::host;
  if (get(node, &p) == CUDA_SUCCESS) n.host_fn = reinterpret_cast<std::uintptr_t>(p.fn);
}

// What the model needs of a node of `type` (a child graph is its caller's
// to flatten). `Fns` is the driver's entry points (a private type, deduced).
template <class Fns>
void read_node(const Fns& f, CUgraphNode node, CUgraphNodeType type, raw_graph_node& n) {
  switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: read_kernel_node(f.kernel_node_get_params, node, n); return;
    case CU_GRAPH_NODE_TYPE_MEMCPY: read_memcpy_node(f.memcpy_node_get_params, node, n); return;
    case CU_GRAPH_NODE_TYPE_MEMSET: read_memset_node(f.memset_node_get_params, node, n); return;
    case CU_GRAPH_NODE_TYPE_HOST: read_host_node(f.host_node_get_params, node, n); return;
    case CU_GRAPH_NODE_TYPE_GRAPH:
    case CU_GRAPH_NODE_TYPE_EMPTY: n.kind = raw_node_kind::empty; return;
    // Note [Event nodes]: an event node whose event is unreadable is listed.
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      read_event_node(f.event_wait_node_get_event, node, raw_node_kind::event_wait, n);
      return;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      read_event_node(f.event_record_node_get_event, node, raw_node_kind::event_record, n);
      return;
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL: n.what = "external semaphore signal"; return;
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT: n.what = "external semaphore wait"; return;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: read_mem_alloc_node(f.mem_alloc_node_get_params, node, n); return;
    case CU_GRAPH_NODE_TYPE_MEM_FREE: read_mem_free_node(f.mem_free_node_get_params, node, n); return;
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: n.what = "batch memory operation"; return;
    // No call reads a conditional node's bodies back: the model splices in
    // those its add call returned (Note [Conditional nodes]).
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: n.kind = raw_node_kind::conditional; return;
    // A driver newer than these headers may have kinds they do not name.
    default: n.what = "graph node of type " + std::to_string(static_cast<int>(type)); return;
  }
}

// Why the calling thread's last describe_graph() failed (graph_read_failure).
thread_local std::string graph_failure;

bool graph_call_failed(const char* call, CUresult r) {
  static const auto name_of = reinterpret_cast<PFN_cuGetErrorName_v6000>(
      driver_entry_point("cuGetErrorName", 6000));
  const char* name = nullptr;
  if (name_of == nullptr || name_of(r, &name) != CUDA_SUCCESS || name == nullptr) {
    name = "an unknown error";
  }
  graph_failure = std::string(call) + " failed: " + name + " (" +
                  std::to_string(static_cast<int>(r)) + ")";
  return false;
}

// Each edge of `g` between nodes[i] and nodes[j] as an edge from the exit of
// index[i] to the entry of index[j] (they differ for flattened child graphs).
template <class Fns>
bool append_edges(const Fns& f, CUgraph g, const std::vector<CUgraphNode>& nodes,
                  const std::vector<std::pair<std::uint32_t, std::uint32_t>>& index,
                  raw_graph& out) {
  std::size_t edge_count = 0;
  if (const CUresult r = f.graph_get_edges(g, nullptr, nullptr, nullptr, &edge_count);
      r != CUDA_SUCCESS) {
    return graph_call_failed("cuGraphGetEdges", r);
  }
  std::vector<CUgraphNode> from(edge_count), to(edge_count);
  // Edge data is asked for, though not used: without it the driver refuses
  // a graph with programmatic edges (CUDA_ERROR_LOSSY_QUERY), and every
  // edge is a full dependency here (Note [Programmatic dependent launch]).
  std::vector<CUgraphEdgeData> data(edge_count);
  if (edge_count > 0) {
    if (const CUresult r =
            f.graph_get_edges(g, from.data(), to.data(), data.data(), &edge_count);
        r != CUDA_SUCCESS) {
      return graph_call_failed("cuGraphGetEdges", r);
    }
  }
  std::unordered_map<CUgraphNode, std::size_t> position;
  for (std::size_t i = 0; i < nodes.size(); ++i) position.emplace(nodes[i], i);
  for (std::size_t e = 0; e < edge_count; ++e) {
    const auto at_from = position.find(from[e]);
    const auto at_to = position.find(to[e]);
    if (at_from == position.end() || at_to == position.end()) continue;
    out.edges.emplace_back(index[at_from->second].second, index[at_to->second].first);
  }
  return true;
}

}  // namespace

bool cuda_driver_queries::append_graph(std::uintptr_t graph, raw_graph& out, int depth) {
  if (depth > 16) {
    graph_failure = "child graphs nested more than 16 deep";
    return false;
  }
  const auto g = reinterpret_cast<CUgraph>(graph);
  std::size_t count = 0;
  if (const CUresult r = fn().graph_get_nodes(g, nullptr, &count); r != CUDA_SUCCESS) {
    return graph_call_failed("cuGraphGetNodes", r);
  }
  std::vector<CUgraphNode> nodes(count);
  if (count > 0) {
    if (const CUresult r = fn().graph_get_nodes(g, nodes.data(), &count); r != CUDA_SUCCESS) {
      return graph_call_failed("cuGraphGetNodes", r);
    }
  }
  // in/out index of each node: they differ only for child graphs, which
  // are flattened between an entry and an exit node.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> index(count);
  for (std::size_t i = 0; i < count; ++i) {
    CUgraphNodeType type{};
    raw_graph_node n;
    n.handle = reinterpret_cast<std::uintptr_t>(nodes[i]);
    n.owner = graph;  // a child graph's nodes are found by their own graph
    const auto self = static_cast<std::uint32_t>(out.nodes.size());
    index[i] = {self, self};
    if (fn().node_get_type(nodes[i], &type) != CUDA_SUCCESS) {
      n.what = "unknown graph node";
      out.nodes.push_back(std::move(n));
      continue;
    }
    read_node(fn(), nodes[i], type, n);
    out.nodes.push_back(std::move(n));
    if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
      const auto exit = append_child_graph(nodes[i], self, out, depth);
      if (!exit) return false;
      index[i] = {self, *exit};
    }
  }
  return append_edges(fn(), g, nodes, index, out);
}

// The child graph of `node` (already out.nodes[entry], an empty node),
// flattened after it and closed by an empty exit node: every child node
// follows the entry and precedes the exit. The exit's index, or nullopt
// when the child could not be read whole. A child whose graph the driver
// does not give stays the empty entry node alone.
std::optional<std::uint32_t> cuda_driver_queries::append_child_graph(void* node,
                                                                     std::uint32_t entry,
                                                                     raw_graph& out, int depth) {
  CUgraph child = nullptr;
  if (fn().child_graph_get_graph(static_cast<CUgraphNode>(node), &child) != CUDA_SUCCESS) {
    return entry;
  }
  const auto first_child = static_cast<std::uint32_t>(out.nodes.size());
  if (!append_graph(reinterpret_cast<std::uintptr_t>(child), out, depth + 1)) return std::nullopt;
  const auto exit = static_cast<std::uint32_t>(out.nodes.size());
  raw_graph_node exit_node;
  exit_node.kind = raw_node_kind::empty;
  out.nodes.push_back(std::move(exit_node));
  for (std::uint32_t c = first_child; c < exit; ++c) {
    out.edges.emplace_back(entry, c);
    out.edges.emplace_back(c, exit);
  }
  return exit;
}

std::optional<raw_graph> cuda_driver_queries::describe_graph(std::uintptr_t graph) {
  raw_graph g;
  graph_failure.clear();
  if (graph == 0) {
    graph_failure = "no graph";
    return std::nullopt;
  }
  if (!append_graph(graph, g, 0)) return std::nullopt;
  return g;
}

std::string cuda_driver_queries::graph_read_failure() { return graph_failure; }

memory_kind cuda_driver_queries::untracked_memory_kind(std::uint64_t address, memory_side side) {
  if (side == memory_side::host) return memory_kind::pageable_host;
  unsigned type = 0;
  if (fn().pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 static_cast<CUdeviceptr>(address)) != CUDA_SUCCESS) {
    // Unknown to the driver: ordinary host memory.
    return memory_kind::pageable_host;
  }
  return type == CU_MEMORYTYPE_HOST ? memory_kind::pinned_host : memory_kind::device;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> cuda_driver_queries::allocation_range(
    std::uint64_t address) {
  CUdeviceptr base = 0;
  std::size_t size = 0;
  const auto at = static_cast<CUdeviceptr>(address);
  if (fn().pointer_get_attribute(&base, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, at) !=
          CUDA_SUCCESS ||
      fn().pointer_get_attribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, at) != CUDA_SUCCESS) {
    return std::nullopt;
  }
  return std::pair<std::uint64_t, std::uint64_t>{base, size};
}

std::string cuda_driver_queries::function_name(std::uintptr_t fn) {
  std::lock_guard lock(names_mutex_);
  // Code addresses stay valid while their object is loaded; the names of
  // host functions are cached for reports only.
  const auto it = function_names_.find(fn);
  if (it != function_names_.end()) return it->second;
  return function_names_.emplace(fn, injection::function_name(fn)).first->second;
}

marker_driver cuda_marker_driver() {
  marker_driver d;
  d.enqueue = [](std::uintptr_t stream, void (*fn)(void*), void* data) {
    static const auto launch = reinterpret_cast<PFN_cuLaunchHostFunc_v10000>(
        driver_entry_point("cuLaunchHostFunc", 10000));
    return launch != nullptr &&
           launch(reinterpret_cast<CUstream>(stream), fn, data) == CUDA_SUCCESS;
  };
  d.capturing = [](std::uintptr_t stream) {
    static const auto is_capturing = reinterpret_cast<PFN_cuStreamIsCapturing_v10000>(
        driver_entry_point("cuStreamIsCapturing", 10000));
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (is_capturing == nullptr ||
        is_capturing(reinterpret_cast<CUstream>(stream), &status) != CUDA_SUCCESS) {
      return true;  // cannot tell: leave the stream alone
    }
    return status != CU_STREAM_CAPTURE_STATUS_NONE;
  };
  return d;
}

bool cuda_driver_queries::enqueue_host_function(std::uintptr_t stream, void (*fn)(void*),
                                                void* data) {
  return !markers_.capturing(stream) && markers_.enqueue(stream, fn, data);
}

}  // namespace streamsan::injection
