// The synchronous cudaMemcpy and cudaMemset, issued to the legacy default
// stream or to the calling thread's per-thread default stream.
//
// Note [Synchronous calls pick their default stream at compile time]
// cudaMemcpy and cudaMemset take no stream: which default stream they use is
// chosen when the caller is compiled (CUDA_API_PER_THREAD_DEFAULT_STREAM,
// i.e. nvcc --default-stream per-thread, maps them to cudaMemcpy_ptds and
// cudaMemset_ptds). The runtime chooses at run time
// (runtime_options::per_thread_default_stream) and tells the backend through
// copy_request::stream, so default_stream_calls.cpp is compiled twice, once
// in each mode, and the backend picks the variant by that stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace streamsan::rt::cuda {

namespace legacy_default {
cudaError_t memcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) noexcept;
cudaError_t memset(void* dst, int value, std::size_t bytes) noexcept;
}  // namespace legacy_default

namespace per_thread_default {
cudaError_t memcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) noexcept;
cudaError_t memset(void* dst, int value, std::size_t bytes) noexcept;
}  // namespace per_thread_default

}  // namespace streamsan::rt::cuda
