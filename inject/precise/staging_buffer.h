// Host memory that a footprint's read-back copies into (Note [Read-backs
// land in page-locked memory]).
//
// Note [Read-backs land in page-locked memory]
// A copy from the device into pageable memory goes through the driver's
// own page-locked staging buffers, a chunk at a time, and then a host
// copy out of them. cuSolverRf under --precise on an H200 (2026-11-29)
// spent 8.0 of its 14 s in read-back copies, 41 GB at about 5 GB/s, the
// speed of a pageable copy. So the buffers a read-back copies into (the
// summaries and counters, the bitmaps' window) are registered with the
// driver (cuMemHostRegister) when they grow, and the copies land there
// directly. Pinning costs a driver call and locked pages, so a buffer
// grows to twice its size at least and never shrinks.
// A buffer the reader cannot pin (no pinning given, the driver refused)
// is used pageable: slower, never wrong. A pin belongs to the context it
// was made in, and goes with it: the reader never takes back a pin whose
// context was destroyed (its handle may name another context by then),
// and a buffer pinned there is copied into pageable until it grows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace streamsan::precise {

// Pins host memory for the device's copies; the tracker implements it
// over the driver. Neither call throws.
class host_pinning {
 public:
  // Pins [p, p + bytes); what unpin needs, or nullopt when it could not.
  virtual std::optional<std::uintptr_t> pin(void* p, std::size_t bytes) noexcept = 0;
  virtual void unpin(void* p, std::uintptr_t token) noexcept = 0;

 protected:
  ~host_pinning() = default;
};

// A page-aligned host buffer, pinned through a host_pinning while it can
// be. Move-only owner; its contents do not survive a growth.
class staging_buffer {
 public:
  staging_buffer() = default;
  ~staging_buffer();
  staging_buffer(staging_buffer&& other) noexcept;
  staging_buffer& operator=(staging_buffer&& other) noexcept;
  staging_buffer(const staging_buffer&) = delete;
  staging_buffer& operator=(const staging_buffer&) = delete;

  // Room for at least `bytes`, pinned through `pinning` when not null (a
  // growth allocates anew). Throws std::bad_alloc when no memory is left.
  void reserve(std::size_t bytes, host_pinning* pinning);
  void* data() const noexcept { return data_; }
  std::size_t capacity() const noexcept { return bytes_; }
  bool pinned() const noexcept { return token_.has_value(); }
  // The pin's token (the tracker's: the context it was made in).
  std::optional<std::uintptr_t> pin_token() const noexcept { return token_; }
  // Takes the pin back; the memory stays, pageable.
  void unpin() noexcept;

 private:
  void free() noexcept;

  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  host_pinning* pinning_ = nullptr;
  std::optional<std::uintptr_t> token_;
};

}  // namespace streamsan::precise
