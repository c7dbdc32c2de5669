#include "runtime/errors.h"

#include <string>

namespace streamsan::rt {

std::string_view to_string(error_code code) noexcept {
  switch (code) {
    case error_code::invalid_value: return "invalid value";
    case error_code::invalid_device: return "invalid device";
    case error_code::invalid_resource_handle: return "invalid resource handle";
    case error_code::not_ready: return "not ready";
    case error_code::memory_allocation: return "out of memory";
    case error_code::peer_access_unsupported: return "peer access unsupported";
    case error_code::capture_unsupported: return "operation not permitted when stream is capturing";
    case error_code::capture_invalidated: return "capture invalidated";
    case error_code::capture_unjoined: return "capture unjoined";
    case error_code::capture_implicit: return "implicit synchronization with a capturing stream";
    case error_code::not_supported: return "not supported";
    case error_code::launch_failure: return "launch failure";
    case error_code::unknown: return "unknown error";
  }
  return "unknown error";
}

namespace {

std::string cuda_message(error_code code, std::string_view call, std::string_view message) {
  std::string text(call);
  text += ": ";
  text += message;
  text += " (";
  text += to_string(code);
  text += ')';
  return text;
}

}  // namespace

cuda_error::cuda_error(error_code code, std::string_view call, std::string_view message,
                       int native_code)
    : runtime_error(cuda_message(code, call, message)), code_(code), native_code_(native_code) {}

out_of_memory_error::out_of_memory_error(std::string_view call, std::string_view message)
    : cuda_error(error_code::memory_allocation, call, message) {}

}  // namespace streamsan::rt
