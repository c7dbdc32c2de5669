// Raw allocations of each memory kind as move-only owners (no caching; see
// caching_allocator.h for the stream-aware caching allocator).
//
// Each allocation reaches the access log as an alloc_record of its kind and
// its release as a free_record with the kind's documented behaviour:
//   device, managed  cudaMalloc / cudaMallocManaged; freed with cudaFree,
//                    which synchronizes the device (S-MEM-5)
//   pinned_host      cudaMallocHost; cudaFreeHost (no synchronization promised)
//   stream_ordered   cudaMallocAsync on a stream; freed with cudaFreeAsync on
//                    that stream, or on free_async's stream (S-MEM-5)
//   pageable_host    the host heap; std::free
#pragma once

#include <cstdint>
#include <string_view>

#include "runtime/buffer_view.h"
#include "runtime/stream.h"

namespace streamsan::rt {

class buffer : public buffer_view {
 public:
  buffer() = default;
  buffer(buffer&& other) noexcept;
  buffer& operator=(buffer&& other) noexcept;
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  // Frees as described above. Errors are reported on stderr, never thrown.
  ~buffer() noexcept;

  buffer_view view() const noexcept { return *this; }
  // stream_ordered: the allocating stream.
  stream_ref stream() const noexcept { return stream_; }

  // Frees now, throwing on error (sync debug mode "error" included).
  void free();
  // stream_ordered only: cudaFreeAsync on `s` instead of the allocating
  // stream. The memory must not be used by work not ordered before it.
  void free_async(stream_ref s);
  // Gives up ownership: the memory lives until the session ends.
  buffer_view release() noexcept;

 private:
  friend struct buffer_access;
  void reset() noexcept;

  stream_ref stream_;
  std::uint64_t session_ = 0;
};

// `device` -1 means the current device. `label` names the allocation in
// reports.
buffer allocate_device(std::uint64_t bytes, int device = -1, std::string_view label = {});
buffer allocate_pinned_host(std::uint64_t bytes, std::string_view label = {});
buffer allocate_managed(std::uint64_t bytes, int device = -1, std::string_view label = {});
// Valid only for work ordered after this call on `s` (S-MEM-5).
buffer allocate_async(std::uint64_t bytes, stream_ref s, std::string_view label = {});
buffer allocate_pageable_host(std::uint64_t bytes, std::string_view label = {});

}  // namespace streamsan::rt
