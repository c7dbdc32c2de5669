// Kernel launches and host functions with declared access sets.
//
//   launch(s, kernels::axpy{2.0f, x, y}, reads(x), read_writes(y));
//   launch(s, kernels::axpy{2.0f, x, y});   // accesses implied by the kernel
//   launch(s, kernels::spin{1ms}, writes(a)); // "a kernel that writes a"
//
// The declared accesses are what reaches the access log (kernel_launch
// records); they need not match what the kernel does, which lets tests and
// scenarios stand a spin kernel in for any kernel.
#pragma once

#include <array>
#include <concepts>
#include <span>
#include <string_view>

#include "runtime/backend/backend.h"
#include "runtime/buffer_view.h"
#include "runtime/kernels.h"
#include "runtime/stream.h"

namespace streamsan::rt {

struct declared_access {
  buffer_view view;
  access_mode mode = access_mode::read;
};

inline declared_access reads(const buffer_view& v) noexcept { return {v, access_mode::read}; }
inline declared_access writes(const buffer_view& v) noexcept { return {v, access_mode::write}; }
inline declared_access read_writes(const buffer_view& v) noexcept {
  return {v, access_mode::read_write};
}

// The accesses kernel `k` really performs (reads of inputs, writes of
// outputs); spin has none.
std::span<const declared_access> implied_accesses(const kernels::kernel& k,
                                                  std::array<declared_access, 2>& storage) noexcept;

// Launches `k` on `s` with exactly `accesses` declared (none if empty).
// `name` overrides the kernel's name in reports. Arguments are checked
// (sizes, memory the device can reach) and usage_error names the problem.
void launch(stream_ref s, const kernels::kernel& k, std::span<const declared_access> accesses,
            std::string_view name = {});

// launch(s, k): the implied accesses; launch(s, k, reads(x), ...): exactly these.
template <class... A>
  requires(std::same_as<A, declared_access> && ...)
void launch(stream_ref s, const kernels::kernel& k, const A&... accesses) {
  if constexpr (sizeof...(A) == 0) {
    std::array<declared_access, 2> storage;
    launch(s, k, implied_accesses(k, storage));
  } else {
    const std::array<declared_access, sizeof...(A)> list{accesses...};
    launch(s, k, std::span<const declared_access>(list));
  }
}

// cudaLaunchHostFunc (S-HOSTFN-1): `fn` runs after all prior work on `s`;
// later work waits for it. `accesses` are what fn touches, for the log.
// `fn` must not call the streamsan API (usage_error if it does).
void launch_host_func(stream_ref s, host_function fn,
                      std::span<const declared_access> accesses = {},
                      std::string_view name = "host_func");

}  // namespace streamsan::rt
