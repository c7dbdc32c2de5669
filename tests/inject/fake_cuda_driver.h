// Test control of the fake CUDA driver (fake_cuda_driver.cpp, a shared
// library named libcuda.so.1 that the Sanitizer API source finds with
// dlopen(RTLD_NOLOAD)): events complete when the test says so.
#pragma once

#include <cuda.h>

#include <string>

extern "C" {
// Events recorded from now on complete only at fake_cuda_complete_events().
void fake_cuda_hold_events(bool hold);
void fake_cuda_complete_events();
// cuFuncGetModule and cuFuncGetName of `function`.
void fake_cuda_define_function(CUfunction function, CUmodule module, const char* mangled);
void fake_cuda_set_capturing(CUstream stream, bool capturing);
// cuStreamQuery answers CUDA_ERROR_NOT_READY for a busy stream.
void fake_cuda_set_stream_busy(CUstream stream, bool busy);
// How many cuStreamQuery calls were made so far.
int fake_cuda_stream_queries();
// The stream answers CUDA_ERROR_NOT_READY to its next `queries` queries,
// then is idle (work that drains).
void fake_cuda_set_stream_busy_for(CUstream stream, int queries);
// Every event recorded so far completes when a query finds a stream idle
// (held events of kernels that end while a wait polls their stream).
void fake_cuda_complete_events_when_a_stream_drains(bool complete);
// cuMemHostRegister: whether [p, p + bytes) lies in one registered range;
// how many ranges are registered; how many cuMemHostUnregister calls
// succeeded; refusing from now on; the driver's own forgetting of a
// destroyed context's registrations.
bool fake_cuda_host_registered(const void* p, size_t bytes);
size_t fake_cuda_host_registrations();
int fake_cuda_host_unregistrations();
void fake_cuda_refuse_host_register(bool refuse);
void fake_cuda_destroy_context(CUcontext ctx);
// A context with a destroyed one's handle; how many times a destroyed
// context's handle was pushed since the process began.
void fake_cuda_create_context(CUcontext ctx);
int fake_cuda_destroyed_context_uses();
// The next cuKernelGetFunction calls `hook(arg)` first, as the driver's lazy
// module loading delivers a module-loaded callback from inside that call.
void fake_cuda_on_next_kernel_lookup(void (*hook)(void*), void* arg);

// Graphs for cuda_driver_queries (through cuGetProcAddress_v2, as the real
// library resolves them): a graph, and a node of `type` that depends on
// `deps` (in that order, the graph's edges). Node parameters are set apart.
CUgraph fake_cuda_graph_create();
CUgraphNode fake_cuda_graph_add(CUgraph graph, CUgraphNodeType type, const CUgraphNode* deps,
                                size_t dep_count);
void fake_cuda_graph_set_kernel(CUgraphNode node, CUfunction function);
void fake_cuda_graph_set_memset(CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS* params);
void fake_cuda_graph_set_child(CUgraphNode node, CUgraph child);
// Every edge of `graph` becomes programmatic (edge data that cuGraphGetEdges
// gives only with an edge data array: CUDA_ERROR_LOSSY_QUERY without).
void fake_cuda_graph_mark_edges_programmatic(CUgraph graph);
}
