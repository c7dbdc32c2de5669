#include "runtime/cuda/cuda_check.h"

#include <array>
#include <cstdio>
#include <utility>

#include "runtime/cuda/native_handles.h"

namespace streamsan::rt::cuda {

namespace {

// cudaError_t is CUDA's open-ended enum (each release adds values), so it is
// mapped by table rather than by an exhaustive switch.
constexpr std::array<std::pair<cudaError_t, error_code>, 21> error_codes{{
    {cudaErrorInvalidValue, error_code::invalid_value},
    {cudaErrorInvalidDevice, error_code::invalid_device},
    {cudaErrorNoDevice, error_code::invalid_device},
    {cudaErrorInvalidResourceHandle, error_code::invalid_resource_handle},
    {cudaErrorNotReady, error_code::not_ready},
    {cudaErrorMemoryAllocation, error_code::memory_allocation},
    {cudaErrorPeerAccessUnsupported, error_code::peer_access_unsupported},
    {cudaErrorStreamCaptureUnsupported, error_code::capture_unsupported},
    {cudaErrorStreamCaptureInvalidated, error_code::capture_invalidated},
    {cudaErrorStreamCaptureUnjoined, error_code::capture_unjoined},
    {cudaErrorStreamCaptureImplicit, error_code::capture_implicit},
    {cudaErrorNotSupported, error_code::not_supported},
    // Errors of asynchronous work that surface at a later call (S-ASYNC-2).
    {cudaErrorLaunchFailure, error_code::launch_failure},
    {cudaErrorIllegalAddress, error_code::launch_failure},
    {cudaErrorLaunchTimeout, error_code::launch_failure},
    {cudaErrorMisalignedAddress, error_code::launch_failure},
    {cudaErrorIllegalInstruction, error_code::launch_failure},
    {cudaErrorHardwareStackError, error_code::launch_failure},
    {cudaErrorInvalidPc, error_code::launch_failure},
    {cudaErrorAssert, error_code::launch_failure},
    {cudaErrorLaunchOutOfResources, error_code::launch_failure},
}};

std::string hex(const void* p) {
  char text[2 + 16 + 1];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

}  // namespace

error_code to_error_code(cudaError_t status) noexcept {
  for (const auto& [native_status, code] : error_codes) {
    if (native_status == status) return code;
  }
  return error_code::unknown;
}

void throw_cuda_error(cudaError_t status, std::string_view call, std::string_view objects) {
  // Clears the error from cudart's last-error slot; a sticky error (the
  // context is broken) stays and every later call reports it again.
  (void)cudaGetLastError();
  std::string message(objects);
  if (!message.empty()) message += ": ";
  message += cudaGetErrorString(status);
  message += " [";
  message += cudaGetErrorName(status);
  message += ']';
  throw cuda_error(to_error_code(status), call, message, static_cast<int>(status));
}

std::string describe_device(int device) { return "device " + std::to_string(device); }

std::string describe(device_stream stream) {
  std::string text;
  if (is_legacy_default(stream)) {
    text = "legacy default stream";
  } else if (is_per_thread_default(stream)) {
    text = "per-thread default stream";
  } else {
    text = "stream " + hex(native(stream));
  }
  return text + " (" + describe_device(stream.device) + ')';
}

std::string describe(event_handle event) { return "event " + hex(native(event)); }

std::string describe_pointer(const void* ptr) { return hex(ptr); }

}  // namespace streamsan::rt::cuda
