// Builds buffer views and owners; the only code that touches their
// protected parts.
#pragma once

#include <cstdint>

#include "sanitizer/log/record.h"  // is_device_memory
#include "runtime/buffer.h"
#include "runtime/buffer_view.h"
#include "runtime/caching_allocator.h"

namespace streamsan::rt {

struct buffer_access {
  static buffer_view view(void* data, std::uint64_t size, alloc_id alloc, std::uint64_t offset,
                          memory_kind kind, int device) noexcept {
    return buffer_view(data, size, alloc, offset, kind, device);
  }
  template <class Owner>
  static void adopt(Owner& owner, const buffer_view& view, stream_ref stream,
                    std::uint64_t session) noexcept {
    static_cast<buffer_view&>(owner) = view;
    owner.stream_ = stream;
    owner.session_ = session;
  }
  template <class Owner>
  static std::uint64_t session_of(const Owner& owner) noexcept {
    return owner.session_;
  }
  // The owner's view, emptied (release()).
  template <class Owner>
  static buffer_view take(Owner& owner) noexcept {
    const buffer_view v = owner;
    static_cast<buffer_view&>(owner) = buffer_view{};
    owner.stream_ = stream_ref{};
    owner.session_ = 0;
    return v;
  }
  // Moves `from` into the empty `to`.
  template <class Owner>
  static void move(Owner& to, Owner& from) noexcept {
    const auto stream = from.stream_;
    const auto session = from.session_;
    adopt(to, take(from), stream, session);
  }
};

}  // namespace streamsan::rt
