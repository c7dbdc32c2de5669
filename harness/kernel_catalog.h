// The kernel library a scenario can launch, and each kernel's parameters.
// A launch's read and write sets follow from the parameters' roles, so a
// scenario cannot declare a read set that the kernel does not really have.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace streamsan::harness {

enum class kernel_kind : std::uint8_t { fill, copy, scale, axpy, reduce_sum, spin };

enum class param_role : std::uint8_t {
  read,        // a buffer the kernel reads
  write,       // a buffer the kernel writes
  read_write,  // a buffer the kernel reads and writes
  scalar,      // a number
};

struct kernel_param {
  std::string_view name;
  param_role role = param_role::scalar;
  bool optional = false;  // scalars only: default_value when omitted
  double default_value = 0;
};

struct kernel_signature {
  kernel_kind kind;
  std::string_view name;
  std::span<const kernel_param> params;
};

std::span<const kernel_signature> kernel_catalog() noexcept;
const kernel_signature& signature(kernel_kind kind) noexcept;
std::optional<kernel_kind> find_kernel(std::string_view name) noexcept;
std::string_view to_string(kernel_kind kind) noexcept;

}  // namespace streamsan::harness
