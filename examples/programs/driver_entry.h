// Shared by the example programs that call the driver API: its entry points
// are taken from the runtime (cudaGetDriverEntryPointByVersion), so the
// programs link the runtime only.
#pragma once

#include <cuda.h>

#include "example_common.h"

template <class Fn>
Fn driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found));
  if (fn == nullptr || found != cudaDriverEntryPointSuccess) {
    std::fprintf(stderr, "no %s in the driver\n", name);
    std::exit(2);
  }
  return reinterpret_cast<Fn>(fn);
}

inline void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "%s failed: %d\n", what, static_cast<int>(r));
    std::exit(2);
  }
}
