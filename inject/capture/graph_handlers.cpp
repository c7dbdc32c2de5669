// Stream capture, graph instantiation and launch, graph destruction.

#include "inject/capture/api_params.h"
#include "inject/capture/api_table.h"

namespace streamsan::injection {
namespace {

// ---- runtime ----

// cudaStreamBeginCapture and cudaStreamBeginCaptureToGraph start with the
// stream.
template <class Params>
void runtime_begin_capture(api_context& c) {
  c.model.capture_began(c.here(), c.stream(c.params<Params>().stream));
}

void runtime_end_capture(api_context& c) {
  const auto& p = c.params<cudaStreamEndCapture_v10000_params>();
  c.model.capture_ended(c.here(), c.stream(p.stream), handle_of(p.pGraph ? *p.pGraph : nullptr));
}

// A capture that was invalidated (a call the capture mode forbids, a
// rule of stream capture broken) still ends at cudaStreamEndCapture, which
// then fails and gives no graph: the stream leaves capture mode all the same,
// and work on it runs again.
template <class Params, auto stream_of>
void end_failed_capture(api_context& c) {
  if (c.call.site != api_site::exit || outcome_of(c.call) != api_outcome::failed) return;
  c.model.capture_ended(c.here(), c.stream(c.params<Params>().*stream_of), 0);
}

// cudaGraphExecUpdate and cuGraphExecUpdate(_v2) start with (exec, graph):
// the executable graph now runs `graph`'s parameters (same topology, or the
// update fails), so it is read again, as at instantiation, under a new id.
struct graph_exec_update_params {
  void* exec;
  void* graph;
};

void graph_exec_updated(api_context& c) {
  const auto& p = c.params<graph_exec_update_params>();
  c.model.graph_instantiated(c.here(), handle_of(p.exec), handle_of(p.graph));
}

// Every variant starts with (cudaGraphExec_t*, cudaGraph_t).
void runtime_graph_instantiate(api_context& c) {
  const auto& p = c.params<cudaGraphInstantiateWithFlags_v11040_params>();
  c.model.graph_instantiated(c.here(), handle_of(*p.pGraphExec), handle_of(p.graph));
}

void runtime_graph_launch(api_context& c) {
  const auto& p = c.params<cudaGraphLaunch_v10000_params>();
  c.model.graph_launched(c.here(), handle_of(p.graphExec), c.stream(p.stream));
}

void runtime_graph_exec_destroy(api_context& c) {
  c.model.graph_exec_destroyed(handle_of(c.params<cudaGraphExecDestroy_v10000_params>().graphExec));
}

void runtime_graph_destroy(api_context& c) {
  c.model.graph_destroyed(handle_of(c.params<cudaGraphDestroy_v10000_params>().graph));
}

// (Batch memory operation and external semaphore nodes stay unmodelled:
// their semantics are not, and the exit lists them.)
// Every cudaGraphAdd*Node starts with (cudaGraphNode_t*, cudaGraph_t), every
// cuGraphAdd*Node with (CUgraphNode*, CUgraph): where the node was made
// (Note [Where graph nodes were made]).
struct graph_add_params {
  void** node;
  void* graph;
};

void graph_node_added(api_context& c) {
  const auto& p = c.params<graph_add_params>();
  if (p.node != nullptr) c.model.graph_node_added(c.here(), handle_of(*p.node), handle_of(p.graph));
}

// ---- driver ----

// Every variant starts with the stream.
void driver_begin_capture(api_context& c) {
  c.model.capture_began(c.here(), c.stream(c.params<cuStreamBeginCapture_params>().hStream));
}

void driver_end_capture(api_context& c) {
  const auto& p = c.params<cuStreamEndCapture_params>();
  c.model.capture_ended(c.here(), c.stream(p.hStream),
                        handle_of(p.phGraph ? *p.phGraph : nullptr));
}

// Every variant starts with (CUgraphExec*, CUgraph).
void driver_graph_instantiate(api_context& c) {
  const auto& p = c.params<cuGraphInstantiateWithFlags_params>();
  c.model.graph_instantiated(c.here(), handle_of(*p.phGraphExec), handle_of(p.hGraph));
}

void driver_graph_launch(api_context& c) {
  const auto& p = c.params<cuGraphLaunch_params>();
  c.model.graph_launched(c.here(), handle_of(p.hGraph), c.stream(p.hStream));
}

void driver_graph_exec_destroy(api_context& c) {
  c.model.graph_exec_destroyed(handle_of(c.params<cuGraphExecDestroy_params>().hGraphExec));
}

void driver_graph_destroy(api_context& c) {
  c.model.graph_destroyed(handle_of(c.params<cuGraphDestroy_params>().hGraph));
}

void add_runtime_graph_handlers(api_table& t) {
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000,
         CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000},
        {.on_exit = runtime_begin_capture<cudaStreamBeginCapture_v10000_params>});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030,
         CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030},
        {.on_exit = runtime_begin_capture<cudaStreamBeginCaptureToGraph_v12030_params>});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000,
         CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000},
        {.on_exit = runtime_end_capture,
         .around = end_failed_capture<cudaStreamEndCapture_v10000_params,
                                      &cudaStreamEndCapture_v10000_params::stream>});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000},
        {.on_exit = runtime_graph_instantiate});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000},
        {.on_exit = runtime_graph_launch});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecUpdate_v10020}, {.on_exit = graph_exec_updated});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecDestroy_v10000},
        {.on_entry = runtime_graph_exec_destroy});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphDestroy_v10000}, {.on_entry = runtime_graph_destroy});
  t.add({CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddChildGraphNode_v10000,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddEmptyNode_v10000,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddEventRecordNode_v11010,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddEventWaitNode_v11010,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddHostNode_v10000,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddKernelNode_v10000,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemAllocNode_v11040,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemFreeNode_v11040,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNode1D_v11010,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNodeFromSymbol_v11010,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNodeToSymbol_v11010,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNode_v10000,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemsetNode_v10000,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddNode_v12020,
         CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddNode_v12030},
        {.on_exit = graph_node_added});
}

void add_driver_graph_handlers(api_table& t) {
  t.add({CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,
         CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
         CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
         CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
         CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph,
         CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz},
        {.on_exit = driver_begin_capture});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
         CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz},
        {.on_exit = driver_end_capture,
         .around = end_failed_capture<cuStreamEndCapture_params, &cuStreamEndCapture_params::hStream>});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2,
         CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
         CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams,
         CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz},
        {.on_exit = driver_graph_instantiate});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz},
        {.on_exit = driver_graph_launch});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate, CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2},
        {.on_exit = graph_exec_updated});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuGraphExecDestroy}, {.on_entry = driver_graph_exec_destroy});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuGraphDestroy}, {.on_entry = driver_graph_destroy});
  t.add({CUPTI_DRIVER_TRACE_CBID_cuGraphAddChildGraphNode,
         CUPTI_DRIVER_TRACE_CBID_cuGraphAddEmptyNode,
         CUPTI_DRIVER_TRACE_CBID_cuGraphAddEventRecordNode,
         CUPTI_DRIVER_TRACE_CBID_cuGraphAddEventWaitNode,
         CUPTI_DRIVER_TRACE_CBID_cuGraphAddHostNode, CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode,
         CUPTI_DRIVER_TRACE_CBID_cuGraphAddKernelNode_v2,
         CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemAllocNode,
         CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemFreeNode, CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemcpyNode,
         CUPTI_DRIVER_TRACE_CBID_cuGraphAddMemsetNode, CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode,
         CUPTI_DRIVER_TRACE_CBID_cuGraphAddNode_v2},
        {.on_exit = graph_node_added});
}

}  // namespace

void add_graph_handlers(api_tables& t) {
  add_runtime_graph_handlers(t.runtime);
  add_driver_graph_handlers(t.driver);
}

}  // namespace streamsan::injection
