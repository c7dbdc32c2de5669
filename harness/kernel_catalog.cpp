#include "harness/kernel_catalog.h"

#include <array>

namespace streamsan::harness {
namespace {

// Parameter names follow runtime/backend/kernel_args.h.
constexpr std::array fill_params{
    kernel_param{"out", param_role::write},
    kernel_param{"value", param_role::scalar},
};
constexpr std::array copy_params{
    kernel_param{"dst", param_role::write},
    kernel_param{"src", param_role::read},
};
constexpr std::array scale_params{
    kernel_param{"data", param_role::read_write},
    kernel_param{"factor", param_role::scalar},
};
constexpr std::array axpy_params{
    kernel_param{"x", param_role::read},
    kernel_param{"y", param_role::read_write},
    kernel_param{"a", param_role::scalar, true, 1.0},
};
// out[0] = sum of in.
constexpr std::array reduce_sum_params{
    kernel_param{"in", param_role::read},
    kernel_param{"out", param_role::write},
};
// spin keeps its stream busy, which is what makes an unordered successor on
// another stream really overtake it on a GPU. It touches no memory.
constexpr std::array spin_params{
    kernel_param{"nanoseconds", param_role::scalar, true, 1'000'000.0},
};

const std::array<kernel_signature, 6> catalog{{
    {kernel_kind::fill, "fill", fill_params},
    {kernel_kind::copy, "copy", copy_params},
    {kernel_kind::scale, "scale", scale_params},
    {kernel_kind::axpy, "axpy", axpy_params},
    {kernel_kind::reduce_sum, "reduce_sum", reduce_sum_params},
    {kernel_kind::spin, "spin", spin_params},
}};

}  // namespace

std::span<const kernel_signature> kernel_catalog() noexcept { return catalog; }

const kernel_signature& signature(kernel_kind kind) noexcept {
  return catalog[static_cast<std::size_t>(kind)];
}

std::optional<kernel_kind> find_kernel(std::string_view name) noexcept {
  for (const auto& k : catalog) {
    if (k.name == name) return k.kind;
  }
  return std::nullopt;
}

std::string_view to_string(kernel_kind kind) noexcept { return signature(kind).name; }

}  // namespace streamsan::harness
