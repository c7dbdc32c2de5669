// The cuda backend's handles are the CUDA handles themselves, bit-cast to
// integers (Note [Backend handles are opaque values] in
// runtime/backend/handles.h). The legacy default stream is cudaStreamLegacy
// (0x1) and the per-thread default stream cudaStreamPerThread (0x2): both
// mean "that stream of the current device", which is why every call on a
// device_stream first makes stream.device current (device_scope.h).
#pragma once

#include <cuda_runtime_api.h>

#include <bit>
#include <cstdint>

#include "runtime/backend/handles.h"

namespace streamsan::rt::cuda {

template <class Handle, class Native>
inline Handle to_handle(Native native) noexcept {
  static_assert(sizeof(Native) == sizeof(std::uint64_t));
  return static_cast<Handle>(std::bit_cast<std::uint64_t>(native));
}

template <class Native, class Handle>
inline Native to_native(Handle handle) noexcept {
  static_assert(sizeof(Native) == sizeof(std::uint64_t));
  return std::bit_cast<Native>(static_cast<std::uint64_t>(handle));
}

inline cudaStream_t native(device_stream stream) noexcept {
  return to_native<cudaStream_t>(stream.handle);
}
inline cudaEvent_t native(event_handle event) noexcept { return to_native<cudaEvent_t>(event); }
inline cudaGraph_t native(graph_handle graph) noexcept { return to_native<cudaGraph_t>(graph); }
inline cudaGraphExec_t native(graph_exec_handle exec) noexcept {
  return to_native<cudaGraphExec_t>(exec);
}

inline bool is_legacy_default(device_stream stream) noexcept {
  return native(stream) == cudaStreamLegacy;
}
inline bool is_per_thread_default(device_stream stream) noexcept {
  return native(stream) == cudaStreamPerThread;
}

}  // namespace streamsan::rt::cuda
