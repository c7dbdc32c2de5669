#include "runtime/backend/kernel_args.h"

namespace streamsan::rt {

std::string_view to_string(kernel_kind kind) noexcept {
  switch (kind) {
    case kernel_kind::fill: return "fill";
    case kernel_kind::copy: return "copy";
    case kernel_kind::scale: return "scale";
    case kernel_kind::axpy: return "axpy";
    case kernel_kind::reduce_sum: return "reduce_sum";
    case kernel_kind::spin: return "spin";
  }
  return "unknown";
}

}  // namespace streamsan::rt
