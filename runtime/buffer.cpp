#include "runtime/buffer.h"

#include <iostream>
#include <string>
#include <utility>

#include "runtime/session/buffer_access.h"
#include "runtime/session/session.h"

namespace streamsan::rt {
namespace {

std::string call_name(memory_kind kind) {
  switch (kind) {
    case memory_kind::device: return "allocate_device";
    case memory_kind::pinned_host: return "allocate_pinned_host";
    case memory_kind::pageable_host: return "allocate_pageable_host";
    case memory_kind::managed: return "allocate_managed";
    case memory_kind::stream_ordered: return "allocate_async";
    case memory_kind::cached_block: return "caching_allocate";
  }
  return "allocate";
}

buffer allocate(memory_kind kind, std::uint64_t bytes, int device, const stream_ref* on,
                std::string_view label) {
  auto& s = enter();
  const auto what = [&] {
    std::string text = call_name(kind) + "(" + std::to_string(bytes) + " bytes";
    if (on != nullptr) text += ", " + on->name();
    return text + ")";
  };
  std::lock_guard lock(s.mutex);
  int d = 0;
  device_stream target;
  stream_ref owner_stream;
  if (on != nullptr) {
    auto& st = s.stream(*on, what);
    if (!is_none(st.capture)) {
      throw usage_error(what() + ": stream-ordered allocation during graph capture is not "
                        "supported by streamsan");
    }
    d = st.device;
    target = st.target();
    owner_stream = *on;
  } else {
    d = s.resolve_device(device, what);
  }
  void* data = s.device->allocate(kind, d, bytes, target);
  if (data == nullptr) {
    const auto info = s.device->mem_get_info(d);
    throw out_of_memory_error(what(), "tried to allocate " + std::to_string(bytes) +
                                          " bytes on device " + std::to_string(d) + " (" +
                                          std::to_string(info.free) + " of " +
                                          std::to_string(info.total) + " bytes free)");
  }
  const auto id = s.log.new_alloc_id();
  s.allocations.emplace(id, allocation_state{kind, d, data, bytes, owner_stream.id()});
  if (s.logging()) {
    s.emit(alloc_record{id, kind, d, bytes, reinterpret_cast<std::uint64_t>(data),
                        owner_stream.id(), alloc_id{}, 0, s.intern(label)});
  }
  buffer b;
  buffer_access::adopt(b, buffer_access::view(data, bytes, id, 0, kind, d), owner_stream, s.number);
  return b;
}

}  // namespace

buffer allocate_device(std::uint64_t bytes, int device, std::string_view label) {
  return allocate(memory_kind::device, bytes, device, nullptr, label);
}

buffer allocate_pinned_host(std::uint64_t bytes, std::string_view label) {
  return allocate(memory_kind::pinned_host, bytes, -1, nullptr, label);
}

buffer allocate_managed(std::uint64_t bytes, int device, std::string_view label) {
  return allocate(memory_kind::managed, bytes, device, nullptr, label);
}

buffer allocate_async(std::uint64_t bytes, stream_ref s, std::string_view label) {
  return allocate(memory_kind::stream_ordered, bytes, -1, &s, label);
}

buffer allocate_pageable_host(std::uint64_t bytes, std::string_view label) {
  return allocate(memory_kind::pageable_host, bytes, -1, nullptr, label);
}

buffer::buffer(buffer&& other) noexcept { buffer_access::move(*this, other); }

buffer& buffer::operator=(buffer&& other) noexcept {
  if (this != &other) {
    reset();
    buffer_access::move(*this, other);
  }
  return *this;
}

buffer::~buffer() noexcept { reset(); }

void buffer::reset() noexcept {
  try {
    free();
  } catch (const std::exception& e) {
    std::cerr << "streamsan: freeing " << to_string(alloc_) << ": " << e.what() << '\n';
  }
}

buffer_view buffer::release() noexcept { return buffer_access::take(*this); }

void buffer::free() {
  if (session_ == 0) return;
  free_async(stream_);
}

void buffer::free_async(stream_ref on) {
  if (session_ == 0) return;
  auto* s = session_if(session_);
  const auto id = alloc_;
  const auto what = [&] { return "freeing " + to_string(id); };
  if (s == nullptr) {  // the session ended and took the memory with it
    release();
    return;
  }
  std::lock_guard lock(s->mutex);
  const auto it = s->allocations.find(id);
  if (it == s->allocations.end()) {
    release();
    return;
  }
  const auto state = it->second;
  device_stream target;
  stream_id stream{};
  free_mode mode = free_mode::unsynchronized;
  switch (state.kind) {
    case memory_kind::device:
    case memory_kind::managed:
    case memory_kind::cached_block:
      // cudaFree synchronizes the device (S-MEM-5).
      s->forbid_device_sync_during_capture(state.device, what);
      s->check_sync([&] { return what() + " (cudaFree synchronizes the device)"; });
      mode = free_mode::synchronizing;
      break;
    case memory_kind::pinned_host:
    case memory_kind::pageable_host:
      break;
    case memory_kind::stream_ordered: {
      auto& st = s->stream(on, what);
      if (!is_none(st.capture)) {
        throw usage_error(what() + ": stream-ordered free during graph capture is not supported "
                          "by streamsan");
      }
      target = st.target();
      stream = st.id;
      mode = free_mode::stream_ordered;
      break;
    }
  }
  if (state.kind != memory_kind::stream_ordered && !on.is_none() && on != stream_) {
    throw usage_error(what() + ": only stream-ordered memory is freed on a stream");
  }
  s->device->deallocate(state.kind, state.device, state.data, target);
  s->allocations.erase(it);
  release();
  if (s->logging()) s->emit(free_record{id, mode, stream});
}

}  // namespace streamsan::rt
