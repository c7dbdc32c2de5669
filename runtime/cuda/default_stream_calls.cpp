// Compiled twice; see Note [Synchronous calls pick their default stream at
// compile time] in default_stream_calls.h.
#ifdef STREAMSAN_CUDA_PER_THREAD_CALLS
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#define STREAMSAN_CUDA_CALLS_NAMESPACE per_thread_default
#else
#define STREAMSAN_CUDA_CALLS_NAMESPACE legacy_default
#endif

#include "runtime/cuda/default_stream_calls.h"

namespace streamsan::rt::cuda::STREAMSAN_CUDA_CALLS_NAMESPACE {

cudaError_t memcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) noexcept {
  return cudaMemcpy(dst, src, bytes, kind);
}

cudaError_t memset(void* dst, int value, std::size_t bytes) noexcept {
  return cudaMemset(dst, value, bytes);
}

}  // namespace streamsan::rt::cuda::STREAMSAN_CUDA_CALLS_NAMESPACE
