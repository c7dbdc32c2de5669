// Turning a cudaError_t into the runtime's cuda_error (runtime/errors.h).
//
// Note [A failed call names itself and its objects]
// Every cudart call of the backend goes through check(): on failure it throws
// cuda_error whose what() reads
//   "cudaEventRecord: event 0x5610c0 on stream 0x5610a0 (device 0): invalid
//    resource handle [cudaErrorInvalidResourceHandle] (invalid resource handle)"
// i.e. the call, the objects (described lazily, only on failure, so that the
// success path builds no string), CUDA's own text and name, then the
// portable error_code. The backend does not know streamsan ids; the runtime
// adds them when it rethrows or reports.
//
// Non-sticky errors are also cleared from cudart's per-thread "last error"
// (cudaGetLastError) so that a failure that was reported by exception does
// not resurface at an unrelated later call.
#pragma once

#include <cuda_runtime_api.h>

#include <concepts>
#include <string>
#include <string_view>

#include "runtime/backend/handles.h"
#include "runtime/errors.h"

namespace streamsan::rt::cuda {

// The portable code for a CUDA error; error_code::unknown for values the
// runtime has no name for (native_code keeps the exact value).
error_code to_error_code(cudaError_t status) noexcept;

// Throws cuda_error for `status` (which must not be cudaSuccess).
[[noreturn]] void throw_cuda_error(cudaError_t status, std::string_view call,
                                   std::string_view objects);

// Throws unless status == cudaSuccess. `describe` returns the objects
// (std::string) and runs only on failure.
template <class Describe>
  requires std::invocable<Describe&>
inline void check(cudaError_t status, std::string_view call, Describe&& describe) {
  if (status != cudaSuccess) [[unlikely]] throw_cuda_error(status, call, describe());
}

inline void check(cudaError_t status, std::string_view call) {
  if (status != cudaSuccess) [[unlikely]] throw_cuda_error(status, call, {});
}

// Object descriptions for messages: "stream 0x55d0 (device 0)", "legacy
// default stream (device 1)", "per-thread default stream (device 0)",
// "event 0x55e0", "device 1".
std::string describe(device_stream stream);
std::string describe(event_handle event);
std::string describe_device(int device);
std::string describe_pointer(const void* ptr);

}  // namespace streamsan::rt::cuda
