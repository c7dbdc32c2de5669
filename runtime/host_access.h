// The host reading and writing buffers directly. Each helper reaches the
// access log as a host_access record, so that the sanitizer can order it
// against device work (S-COPY-2, S-MEM-6).
//
// Only host-accessible memory may be touched: pinned host, pageable host and
// managed memory. Device memory (device, stream_ordered, cached blocks)
// throws usage_error on every backend, even on sim where it happens to be
// host memory: copy it with memcpy instead.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/buffer_view.h"

namespace streamsan::rt {

// Logs a host access to `view` (already checked host-accessible) and
// returns its bytes. `what` labels the access in reports.
void note_host_access(const buffer_view& view, access_mode mode, std::string_view what);

template <class T>
std::vector<T> host_read(const buffer_view& view) {
  note_host_access(view, access_mode::read, "host read");
  std::vector<T> out(view.count<T>());
  if (!out.empty()) std::memcpy(out.data(), view.data(), out.size() * sizeof(T));
  return out;
}

template <class T>
T host_read_at(const buffer_view& view, std::uint64_t index) {
  const auto element = view.elements<T>(index, 1);
  note_host_access(element, access_mode::read, "host read");
  T value;
  std::memcpy(&value, element.data(), sizeof(T));
  return value;
}

// Writes values to the start of `view`; usage_error when they do not fit.
template <class T>
void host_write(const buffer_view& view, std::span<const T> values) {
  const auto target = view.subview(0, values.size_bytes());
  note_host_access(target, access_mode::write, "host write");
  if (!values.empty()) std::memcpy(target.data(), values.data(), values.size_bytes());
}

template <class T>
void host_fill(const buffer_view& view, T value) {
  note_host_access(view, access_mode::write, "host write");
  auto* p = view.as<T>();
  for (std::uint64_t i = 0, n = view.count<T>(); i < n; ++i) p[i] = value;
}

}  // namespace streamsan::rt
