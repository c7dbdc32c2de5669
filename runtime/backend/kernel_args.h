// The kernel library, as the backend sees it: typed arguments on raw
// pointers. The runtime's public kernels (runtime/kernels.h) are the same
// operations on buffer_views; it converts them before calling
// backend::launch_kernel.
//
// Every kernel works on 32-bit floats. Pointers may point into any memory
// kind the device can access (device, managed, stream-ordered, pinned host).
#pragma once

#include <cstdint>
#include <string_view>
#include <variant>

namespace streamsan::rt {

enum class kernel_kind : std::uint8_t {
  fill,        // out[i] = value
  copy,        // dst[i] = src[i]
  scale,       // data[i] *= factor
  axpy,        // y[i] = a * x[i] + y[i]
  reduce_sum,  // *out = sum of in[0..count)  (one writer; order of summation unspecified)
  spin,        // busy-waits about `nanoseconds` on the device, touches no memory
};

inline constexpr int kernel_kind_count = 6;

std::string_view to_string(kernel_kind kind) noexcept;

struct fill_args {
  float* out = nullptr;
  std::uint64_t count = 0;
  float value = 0;
};

struct copy_args {
  float* dst = nullptr;
  const float* src = nullptr;
  std::uint64_t count = 0;
};

struct scale_args {
  float* data = nullptr;
  std::uint64_t count = 0;
  float factor = 1;
};

struct axpy_args {
  float a = 1;
  const float* x = nullptr;
  float* y = nullptr;
  std::uint64_t count = 0;
};

struct reduce_sum_args {
  const float* in = nullptr;
  std::uint64_t count = 0;
  float* out = nullptr;  // one float
};

struct spin_args {
  std::uint64_t nanoseconds = 0;
};

// Alternatives are in kernel_kind order: kernel_args::index() == kernel_kind.
using kernel_args =
    std::variant<fill_args, copy_args, scale_args, axpy_args, reduce_sum_args, spin_args>;

inline kernel_kind kind_of(const kernel_args& args) noexcept {
  return static_cast<kernel_kind>(args.index());
}

}  // namespace streamsan::rt
