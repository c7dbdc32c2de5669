#include "runtime/kernels.h"

#include <variant>

#include "runtime/launch.h"

namespace streamsan::rt {

std::string_view kernels::name(const kernel& k) noexcept {
  return to_string(static_cast<kernel_kind>(k.index()));
}

std::span<const declared_access> implied_accesses(const kernels::kernel& k,
                                                  std::array<declared_access, 2>& storage) noexcept {
  struct visitor {
    std::array<declared_access, 2>& out;
    std::size_t operator()(const kernels::fill& a) const {
      out[0] = writes(a.out);
      return 1;
    }
    std::size_t operator()(const kernels::copy& a) const {
      out[0] = reads(a.src);
      out[1] = writes(a.dst);
      return 2;
    }
    std::size_t operator()(const kernels::scale& a) const {
      out[0] = read_writes(a.data);
      return 1;
    }
    std::size_t operator()(const kernels::axpy& a) const {
      out[0] = reads(a.x);
      out[1] = read_writes(a.y);
      return 2;
    }
    std::size_t operator()(const kernels::reduce_sum& a) const {
      out[0] = reads(a.in);
      // The kernel writes one float; launch rejects a smaller `out`.
      out[1] = writes(a.out.size() >= sizeof(float) ? a.out.subview(0, sizeof(float)) : a.out);
      return 2;
    }
    std::size_t operator()(const kernels::spin&) const { return 0; }
  };
  const auto n = std::visit(visitor{storage}, k);
  return {storage.data(), n};
}

}  // namespace streamsan::rt
