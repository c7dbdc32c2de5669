// The exceptions the runtime throws.
//
// Note [Errors name the call and the objects]
// Every message starts with the operation and the streamsan ids involved, then
// the cause: "recording event#3 on stream#1: stream belongs to device 1, event
// to device 0". Ids are the ones the access log and the diagnostics use, so a
// message can be matched with a report. Backends throw cuda_error for failures
// the device reports; the runtime checks misuse itself, before it reaches the
// backend, and throws usage_error, so both backends report misuse identically.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace streamsan::rt {

// What went wrong, independent of the backend. The cuda backend maps
// cudaError_t onto these and keeps the raw value in cuda_error::native_code.
enum class error_code : std::uint8_t {
  invalid_value,            // cudaErrorInvalidValue
  invalid_device,           // cudaErrorInvalidDevice
  invalid_resource_handle,  // cudaErrorInvalidResourceHandle
  not_ready,                // cudaErrorNotReady
  memory_allocation,        // cudaErrorMemoryAllocation
  peer_access_unsupported,  // cudaErrorPeerAccessUnsupported
  capture_unsupported,      // cudaErrorStreamCaptureUnsupported
  capture_invalidated,      // cudaErrorStreamCaptureInvalidated
  capture_unjoined,         // cudaErrorStreamCaptureUnjoined
  capture_implicit,         // cudaErrorStreamCaptureImplicit
  not_supported,            // cudaErrorNotSupported, a backend without the feature
  launch_failure,           // an asynchronous error surfaced (S-ASYNC-2)
  unknown,                  // anything else; see native_code
};

std::string_view to_string(error_code code) noexcept;

// Base of every exception the runtime throws.
class runtime_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The backend (the device, or the simulated device) reported a failure.
class cuda_error : public runtime_error {
 public:
  // what() = "<call>: <message> (<code>)".
  cuda_error(error_code code, std::string_view call, std::string_view message,
             int native_code = 0);
  error_code code() const noexcept { return code_; }
  // The backend's own error value (cudaError_t on cuda, 0 on sim).
  int native_code() const noexcept { return native_code_; }

 private:
  error_code code_;
  int native_code_;
};

// An allocation failed, after the caching allocator freed its cached blocks
// and retried (S-MEM-4). The message names the request and the limit.
class out_of_memory_error : public cuda_error {
 public:
  out_of_memory_error(std::string_view call, std::string_view message);
};

// The program used the API wrongly: a destroyed stream or event, an event
// recorded on another device's stream, a synchronization during graph
// capture, elapsed_time on events without timing, ...
class usage_error : public runtime_error {
 public:
  using runtime_error::runtime_error;
};

// Sync debug mode "error" refused a synchronizing operation (S-SYNC-3).
class sync_debug_error : public runtime_error {
 public:
  using runtime_error::runtime_error;
};

}  // namespace streamsan::rt
