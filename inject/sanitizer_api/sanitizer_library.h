// NVIDIA's Compute Sanitizer API (libsanitizer-public.so), loaded at run time.
//
// Note [The Sanitizer API is optional]
// streamsan links no Sanitizer API: the library comes with compute-sanitizer
// (CUDA toolkit, or PyPI's nvidia-cuda-sanitizer-api) and may be missing or
// of an unexpected version on the machine that runs the program. It is
// looked up with dlopen, and each entry point with dlsym; when any is
// missing, --precise says so once and the kernels keep their inferred
// footprints. Only the translation units of inject/sanitizer_api include
// sanitizer.h: it clashes with cupti.h in one translation unit.
#pragma once

#include <sanitizer.h>

#include <string>
#include <vector>

namespace streamsan::sanitizer_api {

struct sanitizer_library {
  decltype(&::sanitizerSubscribe) subscribe = nullptr;
  decltype(&::sanitizerUnsubscribe) unsubscribe = nullptr;
  decltype(&::sanitizerEnableDomain) enable_domain = nullptr;
  decltype(&::sanitizerEnableCallback) enable_callback = nullptr;
  decltype(&::sanitizerGetResultString) result_string = nullptr;
  decltype(&::sanitizerAddPatches) add_patches = nullptr;
  decltype(&::sanitizerPatchInstructions) patch_instructions = nullptr;
  decltype(&::sanitizerPatchModule) patch_module = nullptr;
  decltype(&::sanitizerUnpatchModule) unpatch_module = nullptr;
  decltype(&::sanitizerSetLaunchCallbackData) set_launch_callback_data = nullptr;
  decltype(&::sanitizerSetCallbackData) set_callback_data = nullptr;  // per function
  decltype(&::sanitizerAlloc) alloc = nullptr;
  decltype(&::sanitizerFree) free = nullptr;
  decltype(&::sanitizerMemset) memset = nullptr;
  decltype(&::sanitizerMemcpyHostToDeviceAsync) memcpy_to_device = nullptr;
  decltype(&::sanitizerMemcpyDeviceToHost) memcpy_to_host = nullptr;
  decltype(&::sanitizerStreamSynchronize) stream_synchronize = nullptr;
  decltype(&::sanitizerGetStreamHandle) stream_handle = nullptr;

  std::string path;  // the file it was loaded from

  // "sanitizerPatchModule: SANITIZER_ERROR_INVALID_PARAMETER" style text.
  std::string describe(SanitizerResult r) const;
};

// Where to look: $STREAMSAN_SANITIZER_LIB, next to this library, the CUDA
// toolkit's compute-sanitizer folder (found from the loaded driver's
// neighbours and /usr/local/cuda), and compute-sanitizer on PATH.
std::vector<std::string> candidate_paths();

// The loaded library, or an error text naming every path tried and why each
// failed (a missing file, a missing entry point).
struct load_result {
  const sanitizer_library* library = nullptr;
  std::string error;
};
load_result load_sanitizer_library();

}  // namespace streamsan::sanitizer_api
