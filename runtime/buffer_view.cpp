#include "runtime/buffer_view.h"

#include <string>

#include "runtime/errors.h"
#include "runtime/session/buffer_access.h"

namespace streamsan::rt {

buffer_view buffer_view::untracked(void* data, std::uint64_t bytes, memory_kind kind,
                                   int device) noexcept {
  return buffer_view(data, bytes, alloc_id{}, 0, kind, device);
}

buffer_view buffer_view::subview(std::uint64_t offset, std::uint64_t bytes) const {
  if (offset > size_ || bytes > size_ - offset) {
    throw usage_error("subview [" + std::to_string(offset) + ", " + std::to_string(offset + bytes) +
                      ") of a " + std::to_string(size_) + "-byte view of " + to_string(alloc_) +
                      ": out of bounds");
  }
  return buffer_view(static_cast<char*>(data_) + offset, bytes, alloc_, offset_ + offset, kind_,
                     device_);
}

}  // namespace streamsan::rt
