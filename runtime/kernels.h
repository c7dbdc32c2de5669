// The kernel library (on buffer_views): small float kernels that both
// backends run, enough to write real producer/consumer programs. On sim they
// run on host memory; on cuda they are real kernels.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>
#include <variant>

#include "runtime/buffer_view.h"

namespace streamsan::rt::kernels {

// out[i] = value, for every float of `out`.
struct fill {
  buffer_view out;
  float value = 0;
};

// dst[i] = src[i]; sizes must match.
struct copy {
  buffer_view dst;
  buffer_view src;
};

// data[i] *= factor.
struct scale {
  buffer_view data;
  float factor = 1;
};

// y[i] = a * x[i] + y[i]; sizes must match.
struct axpy {
  float a = 1;
  buffer_view x;
  buffer_view y;
};

// out[0] = sum of the floats of `in`; `out` holds at least one float.
struct reduce_sum {
  buffer_view in;
  buffer_view out;
};

// Keeps the device busy for about `duration`; touches no memory. With
// declared accesses it stands for any kernel that uses memory.
struct spin {
  std::chrono::nanoseconds duration{0};
};

using kernel = std::variant<fill, copy, scale, axpy, reduce_sum, spin>;

// "fill", "copy", "scale", "axpy", "reduce_sum", "spin".
std::string_view name(const kernel& k) noexcept;

}  // namespace streamsan::rt::kernels
