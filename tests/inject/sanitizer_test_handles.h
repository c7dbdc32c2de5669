// The handles that the tests over the fake Sanitizer API share (the
// source's and the launch tracker's): a context, a module, its kernel
// fill(float*, int), two streams, and a device buffer at an address the
// fakes never hand out.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace streamsan::sanitizer_test_handles {

inline const auto ctx = reinterpret_cast<CUcontext>(0xc0);
inline const auto module_a = reinterpret_cast<CUmodule>(0xa000);
inline const auto fill = reinterpret_cast<CUfunction>(0xf111);
inline const auto stream_1 = reinterpret_cast<CUstream>(0x5001);
inline const auto stream_2 = reinterpret_cast<CUstream>(0x5002);
inline constexpr std::uint64_t buffer = 0x7e0000000000;

}  // namespace streamsan::sanitizer_test_handles
