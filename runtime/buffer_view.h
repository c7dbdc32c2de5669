// A value-type view of bytes in one allocation: what kernels, copies,
// access declarations and host helpers take.
//
// A view carries the allocation's streamsan id and its offset in it, so
// that every access reaches the access log as (alloc, offset, size) and
// never as a raw address. Views of caching-allocator blocks name the block
// (memory_kind::cached_block); the engine maps them to the segment.
#pragma once

#include <cstdint>

#include "sanitizer/log/ids.h"
#include "sanitizer/log/record.h"

namespace streamsan::rt {

class buffer_view {
 public:
  buffer_view() = default;

  // Memory the runtime did not allocate (alloc = none: accesses to it reach
  // the log but are not tracked). pageable_host by default.
  static buffer_view untracked(void* data, std::uint64_t bytes,
                               memory_kind kind = memory_kind::pageable_host,
                               int device = 0) noexcept;

  void* data() const noexcept { return data_; }
  std::uint64_t size() const noexcept { return size_; }  // bytes
  bool empty() const noexcept { return size_ == 0; }
  alloc_id alloc() const noexcept { return alloc_; }
  // Offset of data() within the allocation.
  std::uint64_t offset() const noexcept { return offset_; }
  memory_kind kind() const noexcept { return kind_; }
  int device() const noexcept { return device_; }
  // What the access log calls these bytes.
  byte_range range() const noexcept { return {alloc_, offset_, size_}; }

  // Bytes [offset, offset + bytes) of this view; usage_error when they do not
  // fit ("subview [8, 24) of a 16-byte view of alloc#3").
  buffer_view subview(std::uint64_t offset, std::uint64_t bytes) const;
  // Elements [first, first + count) of T.
  template <class T>
  buffer_view elements(std::uint64_t first, std::uint64_t count) const {
    return subview(first * sizeof(T), count * sizeof(T));
  }
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(data_);
  }
  template <class T>
  std::uint64_t count() const noexcept {
    return size_ / sizeof(T);
  }

  friend bool operator==(const buffer_view&, const buffer_view&) = default;

 protected:
  buffer_view(void* data, std::uint64_t size, alloc_id alloc, std::uint64_t offset,
              memory_kind kind, int device) noexcept
      : data_(data), size_(size), alloc_(alloc), offset_(offset), kind_(kind), device_(device) {}
  friend struct buffer_access;

  void* data_ = nullptr;
  std::uint64_t size_ = 0;
  alloc_id alloc_{};
  std::uint64_t offset_ = 0;
  memory_kind kind_ = memory_kind::pageable_host;
  int device_ = 0;
};

}  // namespace streamsan::rt
