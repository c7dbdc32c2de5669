// Error checks for the example programs that link the driver API and NVRTC
// themselves (no CUDA runtime): a failed call prints where and why and
// exits 2, which check_verdict.sh tells from a verdict.
#pragma once

#include <cuda.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CU_CHECK(call)                                                              \
  do {                                                                              \
    const CUresult check_status_ = (call);                                          \
    if (check_status_ != CUDA_SUCCESS) {                                            \
      const char* text = nullptr;                                                   \
      cuGetErrorString(check_status_, &text);                                       \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, text);     \
      std::exit(2);                                                                 \
    }                                                                               \
  } while (0)

#define NVRTC_CHECK(call)                                                           \
  do {                                                                              \
    const nvrtcResult check_status_ = (call);                                       \
    if (check_status_ != NVRTC_SUCCESS) {                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
                   nvrtcGetErrorString(check_status_));                             \
      std::exit(2);                                                                 \
    }                                                                               \
  } while (0)

// The compiled program's CUBIN; the program is destroyed.
inline std::vector<char> take_cubin(nvrtcProgram program) {
  std::size_t size = 0;
  NVRTC_CHECK(nvrtcGetCUBINSize(program, &size));
  std::vector<char> cubin(size);
  NVRTC_CHECK(nvrtcGetCUBIN(program, cubin.data()));
  NVRTC_CHECK(nvrtcDestroyProgram(&program));
  return cubin;
}
