#include "runtime/caching_allocator.h"

#include <iostream>
#include <mutex>
#include <string>
#include <utility>

#include "runtime/allocator/caching_allocator_impl.h"
#include "runtime/session/buffer_access.h"
#include "runtime/session/session.h"

namespace streamsan::rt {

cached_buffer caching_allocate(std::uint64_t bytes, stream_ref on) {
  auto& s = enter();
  const auto what = [&] {
    return "caching_allocate(" + std::to_string(bytes) + " bytes, " + on.name() + ")";
  };
  std::lock_guard lock(s.mutex);
  const auto& st = s.stream(on, what);
  const auto h = s.allocator->allocate(bytes, st, what);
  cached_buffer b;
  buffer_access::adopt(
      b, buffer_access::view(h.data, bytes, h.id, 0, memory_kind::cached_block, st.device), on,
      s.number);
  return b;
}

cached_buffer caching_allocate(std::uint64_t bytes) { return caching_allocate(bytes, current_stream()); }

void record_stream(const buffer_view& view, stream_ref on) {
  auto& s = enter();
  const auto what = [&] { return "record_stream(" + to_string(view.alloc()) + ", " + on.name() + ")"; };
  if (view.kind() != memory_kind::cached_block) {
    throw usage_error(what() + ": not memory from the caching allocator");
  }
  std::lock_guard lock(s.mutex);
  const auto& st = s.stream(on, what);
  // The view names its block, whatever its offset: the whole block is protected.
  s.allocator->record_stream(view.alloc(), st, what);
}

void empty_cache() {
  auto& s = enter();
  const auto what = [] { return std::string("empty_cache()"); };
  std::lock_guard lock(s.mutex);
  s.check_sync(what);
  s.allocator->release_cached(-1);
}

void set_per_process_memory_fraction(double fraction, int device) {
  auto& s = enter();
  const auto what = [&] {
    return "set_per_process_memory_fraction(" + std::to_string(fraction) + ")";
  };
  if (!(fraction >= 0.0 && fraction <= 1.0)) {
    throw usage_error(what() + ": the fraction must be in [0, 1]");
  }
  std::lock_guard lock(s.mutex);
  s.allocator->set_fraction(s.resolve_device(device, what), fraction);
}

memory_stats get_memory_stats(int device) {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  return s.allocator->stats(s.resolve_device(device, [] { return std::string("memory_stats"); }));
}

void reset_peak_memory_stats(int device) {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  s.allocator->reset_peak(
      s.resolve_device(device, [] { return std::string("reset_peak_memory_stats"); }));
}

std::uint64_t memory_allocated(int device) {
  return static_cast<std::uint64_t>(get_memory_stats(device).allocated_bytes.current);
}

std::uint64_t max_memory_allocated(int device) {
  return static_cast<std::uint64_t>(get_memory_stats(device).allocated_bytes.peak);
}

std::uint64_t memory_reserved(int device) {
  return static_cast<std::uint64_t>(get_memory_stats(device).reserved_bytes.current);
}

std::uint64_t max_memory_reserved(int device) {
  return static_cast<std::uint64_t>(get_memory_stats(device).reserved_bytes.peak);
}

std::string memory_summary(int device) {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  return s.allocator->summary(
      s.resolve_device(device, [] { return std::string("memory_summary"); }));
}

// ---- cached_buffer ----

cached_buffer::cached_buffer(cached_buffer&& other) noexcept { buffer_access::move(*this, other); }

cached_buffer& cached_buffer::operator=(cached_buffer&& other) noexcept {
  if (this != &other) {
    reset();
    buffer_access::move(*this, other);
  }
  return *this;
}

cached_buffer::~cached_buffer() noexcept { reset(); }

void cached_buffer::reset() noexcept {
  try {
    free();
  } catch (const std::exception& e) {
    std::cerr << "streamsan: freeing " << to_string(alloc_) << ": " << e.what() << '\n';
  }
}

void cached_buffer::record_stream(stream_ref s) const { rt::record_stream(*this, s); }

void cached_buffer::free() {
  if (session_ == 0) return;
  auto* s = session_if(session_);
  const auto id = alloc_;
  release();
  if (s == nullptr) return;  // the session ended and took the segment with it
  std::lock_guard lock(s->mutex);
  s->allocator->free(id, [&] { return "freeing " + to_string(id); });
}

buffer_view cached_buffer::release() noexcept { return buffer_access::take(*this); }

}  // namespace streamsan::rt
