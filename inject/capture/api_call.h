// One CUDA API callback as a capture source hands it to the dispatcher.
//
// Note [One table for every source]
// CUPTI (inject/cupti) and NVIDIA's Compute Sanitizer API report the same
// runtime and driver calls with the same callback ids (cupti_runtime_cbid.h,
// cupti_driver_cbid.h) and the same parameter structs
// (generated_cuda_runtime_api_meta.h, generated_cuda_meta.h): checked for
// CUDA 13.0. Everything that decodes a call therefore lives here, in
// inject/capture, which never includes cupti.h (it clashes with the
// Sanitizer API's sanitizer.h in one translation unit). A source fills an
// api_call for each runtime or driver callback and calls
// api_dispatcher::dispatch (dispatcher.h); it keeps for itself what only it
// knows: subscribing, switching callbacks on and off, its own reentrancy
// guard, and its other domains (NVTX, resources).
#pragma once

#include <cstdint>

namespace streamsan::injection {

enum class api_domain : std::uint8_t { runtime, driver };

// Where in the call the callback runs.
enum class api_site : std::uint8_t { entry, exit };

struct api_call {
  api_domain domain = api_domain::runtime;
  // CUPTI_RUNTIME_TRACE_CBID_* or CUPTI_DRIVER_TRACE_CBID_*.
  std::uint32_t cbid = 0;
  api_site site = api_site::entry;
  // The call's parameters: the <name>_params struct of the generated meta
  // header for this id. Valid for the duration of the callback.
  const void* params = nullptr;
  // At exit, the call's cudaError_t (runtime) or CUresult (driver); null
  // counts as success.
  const void* return_value = nullptr;
  // The API's name as the source spells it ("cudaMemcpy_v3020"); null when
  // the source has none (the table's name is used).
  const char* function_name = nullptr;
};

enum class api_outcome : std::uint8_t { succeeded, not_ready, failed };

// What the call returned (at exit; succeeded at entry).
api_outcome outcome_of(const api_call& call) noexcept;

}  // namespace streamsan::injection
