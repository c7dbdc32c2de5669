// The kernel library on CUDA: real kernels for runtime/backend/kernel_args.h,
// compiled by nvcc (kernel_library.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "runtime/backend/kernel_args.h"

namespace streamsan::rt::cuda {

// Launches the kernel `args` describes on `stream` (of the current device)
// with cudaLaunchKernel and returns its status. Asynchronous; a zero count
// still launches (an empty kernel), so the launch is one operation in stream
// order and one node in a captured graph, as on sim.
cudaError_t launch_library_kernel(cudaStream_t stream, const kernel_args& args) noexcept;

}  // namespace streamsan::rt::cuda
