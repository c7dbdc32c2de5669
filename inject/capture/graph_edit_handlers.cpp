// Edits of instantiated graphs (Note [Editing an instantiated graph]) and
// the nodes added by cudaGraphAddNode / cuGraphAddNode, which may be
// conditional nodes (Note [Conditional nodes]).
//
// A runtime call names a kernel by its host stub, which the model cannot
// describe: like a runtime kernel launch, cudaGraphExecKernelNodeSetParams
// and cudaGraphExecNodeSetParams are modelled from the driver call nested in
// them, which names the kernel by handle, and from the runtime call only when
// no such driver call was seen (then listed).

#include <string>
#include <vector>

#include "inject/capture/api_params.h"
#include "inject/capture/api_table.h"
#include "inject/model/copy_regions.h"

namespace streamsan::injection {
namespace {

constexpr auto dst = copy_side::destination;
constexpr auto src = copy_side::source;

// Every exec edit starts with (exec, node).
struct exec_edit_params {
  void* exec;
  void* node;
};

raw_graph_node kernel_node(const void* kernel, void** params, void** extra) {
  raw_graph_node n;
  n.kind = raw_node_kind::kernel;
  n.kernel = handle_of(kernel);
  n.args = kernel_arguments::from_launch(params, extra);
  return n;
}

raw_graph_node memcpy_node(memory_region to, memory_region from) {
  raw_graph_node n;
  n.kind = raw_node_kind::memcpy;
  n.dst = to;
  n.src = from;
  return n;
}

raw_graph_node memset_node(std::uint64_t address, std::size_t element_size, std::size_t width,
                           std::size_t height, std::size_t pitch) {
  raw_graph_node n;
  n.kind = raw_node_kind::memset;
  n.dst = memory_region{address, pitched_extent(width * element_size, height, pitch),
                        memory_side::device};
  return n;
}

raw_graph_node host_node(const void* fn) {
  raw_graph_node n;
  n.kind = raw_node_kind::host;
  n.host_fn = handle_of(fn);
  return n;
}

// Note [Event nodes]: an edit names the node's new event.
raw_graph_node event_node(raw_node_kind kind, const void* event) {
  raw_graph_node n;
  n.kind = kind;
  n.event = handle_of(event);
  return n;
}

// Note [Child graph edits]
void set_child(api_context& c, std::string_view api, const void* child) {
  const auto& p = c.params<exec_edit_params>();
  c.model.graph_exec_child_set(c.here(), handle_of(p.exec), handle_of(p.node), handle_of(child),
                               api);
}

void set_node(api_context& c, std::string_view api, const raw_graph_node& n) {
  const auto& p = c.params<exec_edit_params>();
  c.model.graph_exec_node_set(c.here(), handle_of(p.exec), handle_of(p.node), n, api);
}

// A kernel given by its host stub: only listed (the nested driver call
// names it when it runs).
void kernel_not_seen(api_context& c, std::string_view api, std::string_view listed) {
  if (c.launch_modelled()) return;
  raw_graph_node n;
  n.what = "kernel (parameters not seen)";
  const auto& p = c.params<exec_edit_params>();
  const call_site site = c.here();
  c.model.graph_exec_node_set(site, handle_of(p.exec), handle_of(p.node), n, api);
  c.model.unmodelled(site, listed);
}

// ---- runtime ----

void runtime_exec_update(api_context& c) {
  const auto& p = c.params<cudaGraphExecUpdate_v10020_params>();
  c.model.graph_exec_updated(c.here(), handle_of(p.hGraphExec), handle_of(p.hGraph),
                             "cudaGraphExecUpdate");
}

void runtime_exec_kernel(api_context& c) {
  kernel_not_seen(c, "cudaGraphExecKernelNodeSetParams",
                  "cudaGraphExecKernelNodeSetParams (kernel parameters not seen)");
}

void runtime_exec_memcpy(api_context& c) {
  const auto& p = c.params<cudaGraphExecMemcpyNodeSetParams_v10020_params>();
  if (p.pNodeParams == nullptr) return;
  set_node(c, "cudaGraphExecMemcpyNodeSetParams",
           memcpy_node(region_of(*p.pNodeParams, dst), region_of(*p.pNodeParams, src)));
}

void runtime_exec_memcpy_1d(api_context& c) {
  const auto& p = c.params<cudaGraphExecMemcpyNodeSetParams1D_v11010_params>();
  set_node(c, "cudaGraphExecMemcpyNodeSetParams1D",
           memcpy_node({address_of(p.dst), p.count, side_of(p.kind, dst)},
                       {address_of(p.src), p.count, side_of(p.kind, src)}));
}

// A __device__ variable is not an allocation streamsan tracks (as in
// cudaMemcpyToSymbol); the other side still counts.
void runtime_exec_memcpy_to_symbol(api_context& c) {
  const auto& p = c.params<cudaGraphExecMemcpyNodeSetParamsToSymbol_v11010_params>();
  set_node(c, "cudaGraphExecMemcpyNodeSetParamsToSymbol",
           memcpy_node({0, p.count, memory_side::device},
                       {address_of(p.src), p.count, side_of(p.kind, src)}));
}

void runtime_exec_memcpy_from_symbol(api_context& c) {
  const auto& p = c.params<cudaGraphExecMemcpyNodeSetParamsFromSymbol_v11010_params>();
  set_node(c, "cudaGraphExecMemcpyNodeSetParamsFromSymbol",
           memcpy_node({address_of(p.dst), p.count, side_of(p.kind, dst)},
                       {0, p.count, memory_side::device}));
}

void runtime_exec_memset(api_context& c) {
  const auto& p = c.params<cudaGraphExecMemsetNodeSetParams_v10020_params>();
  if (p.pNodeParams == nullptr) return;
  const auto& m = *p.pNodeParams;
  set_node(c, "cudaGraphExecMemsetNodeSetParams",
           memset_node(address_of(m.dst), m.elementSize, m.width, m.height, m.pitch));
}

void runtime_exec_host(api_context& c) {
  const auto& p = c.params<cudaGraphExecHostNodeSetParams_v10020_params>();
  if (p.pNodeParams == nullptr) return;
  set_node(c, "cudaGraphExecHostNodeSetParams",
           host_node(reinterpret_cast<const void*>(p.pNodeParams->fn)));
}

void runtime_exec_node(api_context& c) {
  constexpr std::string_view api = "cudaGraphExecNodeSetParams";
  const auto& p = c.params<cudaGraphExecNodeSetParams_v12020_params>();
  if (c.launch_modelled() || p.nodeParams == nullptr) return;
  const cudaGraphNodeParams& n = *p.nodeParams;
  switch (n.type) {
    case cudaGraphNodeTypeKernel:
      kernel_not_seen(c, api, "cudaGraphExecNodeSetParams (kernel parameters not seen)");
      return;
    case cudaGraphNodeTypeMemcpy:
      set_node(c, api, memcpy_node(region_of(n.memcpy.copyParams, dst),
                                   region_of(n.memcpy.copyParams, src)));
      return;
    case cudaGraphNodeTypeMemset:
      set_node(c, api, memset_node(address_of(n.memset.dst), n.memset.elementSize,
                                   n.memset.width, n.memset.height, n.memset.pitch));
      return;
    case cudaGraphNodeTypeHost:
      set_node(c, api, host_node(reinterpret_cast<const void*>(n.host.fn)));
      return;
    case cudaGraphNodeTypeEventRecord:
      set_node(c, api, event_node(raw_node_kind::event_record, n.eventRecord.event));
      return;
    case cudaGraphNodeTypeWaitEvent:
      set_node(c, api, event_node(raw_node_kind::event_wait, n.eventWait.event));
      return;
    case cudaGraphNodeTypeGraph:
      set_child(c, api, n.graph.graph);
      return;
    default:
      // Event, child graph, semaphore, memory and conditional node edits.
      c.model.unmodelled(c.here(), "cudaGraphExecNodeSetParams (node type " +
                                       std::to_string(static_cast<int>(n.type)) + ")");
      return;
  }
}

// Every exec event edit is (exec, node, event), runtime and driver alike.
template <class Params, raw_node_kind Kind>
void exec_event_edit(api_context& c, std::string_view api) {
  const auto& p = c.params<Params>();
  set_node(c, api, event_node(Kind, p.event));
}

void runtime_exec_event_record(api_context& c) {
  exec_event_edit<cudaGraphExecEventRecordNodeSetEvent_v11010_params, raw_node_kind::event_record>(
      c, "cudaGraphExecEventRecordNodeSetEvent");
}

void runtime_exec_event_wait(api_context& c) {
  exec_event_edit<cudaGraphExecEventWaitNodeSetEvent_v11010_params, raw_node_kind::event_wait>(
      c, "cudaGraphExecEventWaitNodeSetEvent");
}

void runtime_exec_child(api_context& c) {
  const auto& p = c.params<cudaGraphExecChildGraphNodeSetParams_v11010_params>();
  set_child(c, "cudaGraphExecChildGraphNodeSetParams", p.childGraph);
}

void runtime_node_set_enabled(api_context& c) {
  const auto& p = c.params<cudaGraphNodeSetEnabled_v11060_params>();
  c.model.graph_exec_node_enabled(c.here(), handle_of(p.hGraphExec), handle_of(p.hNode),
                                  p.isEnabled != 0, "cudaGraphNodeSetEnabled");
}

// ---- driver ----

// Every variant starts with (exec, graph).
void driver_exec_update(api_context& c) {
  const auto& p = c.params<cuGraphExecUpdate_v2_params>();
  c.model.graph_exec_updated(c.here(), handle_of(p.hGraphExec), handle_of(p.hGraph),
                             "cuGraphExecUpdate");
}

template <class Params>
void driver_exec_kernel(api_context& c) {
  const auto& p = c.params<Params>();
  if (p.nodeParams == nullptr) return;
  const auto& k = *p.nodeParams;
  const void* kernel = k.func;
  if constexpr (requires { k.kern; }) {
    if (kernel == nullptr) kernel = k.kern;
  }
  set_node(c, "cuGraphExecKernelNodeSetParams", kernel_node(kernel, k.kernelParams, k.extra));
  c.set_launch_modelled();
}

void driver_exec_memcpy(api_context& c) {
  const auto& p = c.params<cuGraphExecMemcpyNodeSetParams_params>();
  if (p.copyParams == nullptr) return;
  set_node(c, "cuGraphExecMemcpyNodeSetParams",
           memcpy_node(region_of(*p.copyParams, dst), region_of(*p.copyParams, src)));
}

void driver_exec_memset(api_context& c) {
  const auto& p = c.params<cuGraphExecMemsetNodeSetParams_params>();
  if (p.memsetParams == nullptr) return;
  const auto& m = *p.memsetParams;
  set_node(c, "cuGraphExecMemsetNodeSetParams",
           memset_node(m.dst, m.elementSize, m.width, m.height, m.pitch));
}

void driver_exec_host(api_context& c) {
  const auto& p = c.params<cuGraphExecHostNodeSetParams_params>();
  if (p.nodeParams == nullptr) return;
  set_node(c, "cuGraphExecHostNodeSetParams",
           host_node(reinterpret_cast<const void*>(p.nodeParams->fn)));
}

void driver_exec_node(api_context& c) {
  constexpr std::string_view api = "cuGraphExecNodeSetParams";
  const auto& p = c.params<cuGraphExecNodeSetParams_params>();
  if (p.nodeParams == nullptr) return;
  c.set_launch_modelled();  // the runtime call it runs in models nothing more
  const CUgraphNodeParams& n = *p.nodeParams;
  switch (n.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      const void* kernel = n.kernel.func != nullptr ? static_cast<const void*>(n.kernel.func)
                                                    : static_cast<const void*>(n.kernel.kern);
      set_node(c, api, kernel_node(kernel, n.kernel.kernelParams, n.kernel.extra));
      return;
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      set_node(c, api, memcpy_node(region_of(n.memcpy.copyParams, dst),
                                   region_of(n.memcpy.copyParams, src)));
      return;
    case CU_GRAPH_NODE_TYPE_MEMSET:
      set_node(c, api, memset_node(n.memset.dst, n.memset.elementSize, n.memset.width,
                                   n.memset.height, n.memset.pitch));
      return;
    case CU_GRAPH_NODE_TYPE_HOST:
      set_node(c, api, host_node(reinterpret_cast<const void*>(n.host.fn)));
      return;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      set_node(c, api, event_node(raw_node_kind::event_record, n.eventRecord.event));
      return;
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      set_node(c, api, event_node(raw_node_kind::event_wait, n.eventWait.event));
      return;
    case CU_GRAPH_NODE_TYPE_GRAPH:
      set_child(c, api, n.graph.graph);
      return;
    default:
      c.model.unmodelled(c.here(), "cuGraphExecNodeSetParams (node type " +
                                       std::to_string(static_cast<int>(n.type)) + ")");
      return;
  }
}

void driver_exec_event_record(api_context& c) {
  exec_event_edit<cuGraphExecEventRecordNodeSetEvent_params, raw_node_kind::event_record>(
      c, "cuGraphExecEventRecordNodeSetEvent");
}

void driver_exec_event_wait(api_context& c) {
  exec_event_edit<cuGraphExecEventWaitNodeSetEvent_params, raw_node_kind::event_wait>(
      c, "cuGraphExecEventWaitNodeSetEvent");
}

void driver_exec_child(api_context& c) {
  const auto& p = c.params<cuGraphExecChildGraphNodeSetParams_params>();
  set_child(c, "cuGraphExecChildGraphNodeSetParams", p.childGraph);
}

void driver_node_set_enabled(api_context& c) {
  const auto& p = c.params<cuGraphNodeSetEnabled_params>();
  c.model.graph_exec_node_enabled(c.here(), handle_of(p.hGraphExec), handle_of(p.hNode),
                                  p.isEnabled != 0, "cuGraphNodeSetEnabled");
}

// ---- cudaGraphAddNode / cuGraphAddNode ----

conditional_kind conditional_kind_of(unsigned type) {
  switch (type) {
    case CU_GRAPH_COND_TYPE_WHILE: return conditional_kind::while_loop;
    case CU_GRAPH_COND_TYPE_SWITCH: return conditional_kind::switch_case;
    default: return conditional_kind::if_then;
  }
}

// Both APIs' params structs start with (node*, graph) and end with the node
// parameters; CUgraphNodeParams and cudaGraphNodeParams share their layout
// (type first; conditional: handle, type, size, the bodies).
template <class Params, class NodeParams>
void node_added(api_context& c) {
  const auto& p = c.params<Params>();
  const void* node = p.node ? *p.node : nullptr;
  const NodeParams* n = p.nodeParams;
  if (n == nullptr || static_cast<int>(n->type) != CU_GRAPH_NODE_TYPE_CONDITIONAL ||
      n->conditional.phGraph_out == nullptr) {
    if (node != nullptr) c.model.graph_node_added(c.here(), handle_of(node), handle_of(p.graph));
    return;
  }
  std::vector<std::uintptr_t> bodies;
  for (unsigned i = 0; i < n->conditional.size; ++i) {
    bodies.push_back(handle_of(n->conditional.phGraph_out[i]));
  }
  c.model.conditional_node_added(c.here(), handle_of(node), handle_of(p.graph),
                                 conditional_kind_of(static_cast<unsigned>(n->conditional.type)),
                                 bodies);
}

// The generated structs name their fields differently; these views give the
// names node_added reads.
// (cudaGraphAddNode_v12020 has no struct in CUDA 13's meta header; it is
// the function's CUDA 12.2 parameters.)
struct runtime_add_node_v12020 {
  cudaGraphNode_t* node;
  cudaGraph_t graph;
  const cudaGraphNode_t* dependencies;
  std::size_t count;
  cudaGraphNodeParams* nodeParams;
};
struct runtime_add_node_v12030 {
  cudaGraphNode_t* node;
  cudaGraph_t graph;
  const cudaGraphNode_t* dependencies;
  const cudaGraphEdgeData* edges;
  std::size_t count;
  cudaGraphNodeParams* nodeParams;
};
struct driver_add_node {
  CUgraphNode* node;
  CUgraph graph;
  const CUgraphNode* dependencies;
  std::size_t count;
  CUgraphNodeParams* nodeParams;
};
struct driver_add_node_v2 {
  CUgraphNode* node;
  CUgraph graph;
  const CUgraphNode* dependencies;
  const CUgraphEdgeData* edges;
  std::size_t count;
  CUgraphNodeParams* nodeParams;
};
static_assert(sizeof(runtime_add_node_v12030) == sizeof(cudaGraphAddNode_v12030_params));
static_assert(sizeof(driver_add_node) == sizeof(cuGraphAddNode_params));
static_assert(sizeof(driver_add_node_v2) == sizeof(cuGraphAddNode_v2_params));

}  // namespace

void add_graph_edit_handlers(api_tables& t) {
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecUpdate_v10020},
                {.on_exit = runtime_exec_update});
  // Modelled from the nested driver call (see above).
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecKernelNodeSetParams_v10010},
                {.on_exit = runtime_exec_kernel, .kernel_launch = true});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecNodeSetParams_v12020},
                {.on_exit = runtime_exec_node, .kernel_launch = true});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecMemcpyNodeSetParams_v10020},
                {.on_exit = runtime_exec_memcpy});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecMemcpyNodeSetParams1D_v11010},
                {.on_exit = runtime_exec_memcpy_1d});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecMemcpyNodeSetParamsToSymbol_v11010},
                {.on_exit = runtime_exec_memcpy_to_symbol});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecMemcpyNodeSetParamsFromSymbol_v11010},
                {.on_exit = runtime_exec_memcpy_from_symbol});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecMemsetNodeSetParams_v10020},
                {.on_exit = runtime_exec_memset});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecHostNodeSetParams_v10020},
                {.on_exit = runtime_exec_host});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecEventRecordNodeSetEvent_v11010},
                {.on_exit = runtime_exec_event_record});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecEventWaitNodeSetEvent_v11010},
                {.on_exit = runtime_exec_event_wait});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecChildGraphNodeSetParams_v11010},
                {.on_exit = runtime_exec_child});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphNodeSetEnabled_v11060},
                {.on_exit = runtime_node_set_enabled});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddNode_v12020},
                {.on_exit = node_added<runtime_add_node_v12020, cudaGraphNodeParams>});
  t.runtime.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddNode_v12030},
                {.on_exit = node_added<runtime_add_node_v12030, cudaGraphNodeParams>});

  constexpr auto nested = api_level::in_runtime_launch;
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate, CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2},
               {.on_exit = driver_exec_update});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams},
               {.on_exit = driver_exec_kernel<cuGraphExecKernelNodeSetParams_params>,
                .level = nested});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuGraphExecKernelNodeSetParams_v2},
               {.on_exit = driver_exec_kernel<cuGraphExecKernelNodeSetParams_v2_params>,
                .level = nested});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuGraphExecNodeSetParams},
               {.on_exit = driver_exec_node, .level = nested});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemcpyNodeSetParams},
               {.on_exit = driver_exec_memcpy});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuGraphExecMemsetNodeSetParams},
               {.on_exit = driver_exec_memset});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuGraphExecHostNodeSetParams},
               {.on_exit = driver_exec_host});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuGraphExecEventRecordNodeSetEvent},
               {.on_exit = driver_exec_event_record});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuGraphExecEventWaitNodeSetEvent},
               {.on_exit = driver_exec_event_wait});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuGraphExecChildGraphNodeSetParams},
               {.on_exit = driver_exec_child});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuGraphNodeSetEnabled},
               {.on_exit = driver_node_set_enabled});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode},
               {.on_exit = node_added<driver_add_node, CUgraphNodeParams>});
  t.driver.add({CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2},
               {.on_exit = node_added<driver_add_node_v2, CUgraphNodeParams>});
}

}  // namespace streamsan::injection
