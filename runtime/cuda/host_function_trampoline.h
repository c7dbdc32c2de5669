// Host functions on CUDA (cudaLaunchHostFunc, S-HOSTFN-1).
//
// Note [Who owns a host function]
// cudaLaunchHostFunc takes a C function pointer and a void*. The
// std::function goes to the heap and a trampoline calls it:
//  - launched on an executing stream, it runs exactly once, and the
//    trampoline deletes it after the call;
//  - launched on a capturing stream (S-GRAPH-1), it becomes a host node that
//    runs at every replay of every instantiation of the graph, so it must
//    live as long as the graph does: it is handed to a CUDA user object
//    retained by the graph under capture (cudaUserObjectCreate,
//    cudaGraphRetainUserObject with cudaGraphUserObjectMove), and CUDA
//    deletes it once the graph and its executable graphs are destroyed.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

#include "runtime/backend/backend.h"

namespace streamsan::rt::cuda {

// Enqueues `fn` on `stream` (whose device is current). `objects` describes
// the stream for error messages.
void enqueue_host_function(cudaStream_t stream, host_function fn, std::string_view objects);

}  // namespace streamsan::rt::cuda
