#include "runtime/stream.h"

#include <algorithm>
#include <iostream>
#include <utility>

#include "runtime/event.h"
#include "runtime/session/session.h"

namespace streamsan::rt {

// ---- stream_ref ----

std::string stream_ref::name() const { return to_string(id_); }

stream_flavor stream_ref::flavor() const {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  return s.stream(*this, [&] { return "flavor of " + name(); }).flavor;
}

int stream_ref::priority() const {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  return s.stream(*this, [&] { return "priority of " + name(); }).priority;
}

stream_handle stream_ref::native_handle() const {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  return s.stream(*this, [&] { return "native handle of " + name(); }).handle;
}

bool stream_ref::query() const {
  auto& s = enter();
  const auto what = [&] { return "querying " + name(); };
  std::lock_guard lock(s.mutex);
  auto& st = s.stream(*this, what);
  s.forbid_during_capture(st, what);
  const bool complete = s.device->query_stream(st.target());
  if (s.logging()) s.emit(stream_query{id_, complete});
  return complete;
}

void stream_ref::synchronize() const {
  auto& s = enter();
  const auto what = [&] { return name() + ".synchronize()"; };
  std::unique_lock lock(s.mutex);
  auto& st = s.stream(*this, what);
  s.forbid_during_capture(st, what);
  s.check_sync(what);
  const auto target = st.target();
  lock.unlock();  // Note [One mutex orders the runtime]: waiting only
  s.device->synchronize_stream(target);
  lock.lock();
  if (s.logging()) s.emit(stream_synchronize{id_});
}

void stream_ref::wait_event(const event_ref& e) const { e.wait(*this); }

void stream_ref::record_event(const event_ref& e) const { e.record(*this); }

event stream_ref::record_event() const {
  event e;
  e.record(*this);
  return e;
}

void stream_ref::wait_stream(stream_ref other) const {
  auto& s = enter();
  const auto what = [&] { return name() + ".wait_stream(" + other.name() + ")"; };
  std::lock_guard lock(s.mutex);
  auto& waiter = s.stream(*this, what);
  auto& waited = s.stream(other, what);
  if (waiter.id == waited.id) return;
  if (!streamsan::is_none(waiter.capture) && waiter.capture != waited.capture) {
    throw usage_error(what() + ": " + name() + " is capturing " + to_string(waiter.capture) +
                      " and cannot wait for work outside the capture");
  }
  // Like torch: record an event on `other`, make this stream wait on it.
  const auto join = s.join_event(waited.device);
  s.device->record_event(join, waited.target());
  s.device->stream_wait_event(waiter.target(), join);
  if (auto* capture = s.capture_of(waited)) {
    capture->wait_stream(waiter.id, waited.id);  // joins the capture
    waiter.capture = waited.capture;
    return;  // Note [Captured work is not logged as executed]
  }
  if (s.logging()) s.emit(stream_wait_stream{waiter.id, waited.id});
}

bool stream_ref::is_capturing() const {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  return !streamsan::is_none(s.stream(*this, [&] { return "is_capturing of " + name(); }).capture);
}

// ---- stream ----

stream::stream(stream_options options) {
  auto& s = enter();
  const auto what = [] { return std::string("creating a stream"); };
  std::lock_guard lock(s.mutex);
  const int d = s.resolve_device(options.device, what);
  const auto range = s.device->stream_priority_range(d);
  // CUDA clamps out-of-range priorities; so do we (S-STREAM-7).
  const int priority = std::clamp(options.priority, range.greatest, range.least);
  const auto handle = s.device->create_stream(d, options.non_blocking, priority);
  const auto& st = s.add_stream(
      d, options.non_blocking ? stream_flavor::non_blocking : stream_flavor::blocking, priority,
      handle, true);
  id_ = st.id;
  device_ = d;
  session_ = s.number;
}

stream::stream(stream&& other) noexcept
    : stream_ref(std::exchange(other.id_, stream_id{}), other.device_,
                 std::exchange(other.session_, 0)) {}

stream& stream::operator=(stream&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = std::exchange(other.id_, stream_id{});
    device_ = other.device_;
    session_ = std::exchange(other.session_, 0);
  }
  return *this;
}

stream::~stream() noexcept { reset(); }

stream_ref stream::release() noexcept {
  const stream_ref ref = *this;
  id_ = stream_id{};
  session_ = 0;
  return ref;
}

void stream::reset() noexcept {
  if (is_none()) return;
  const auto id = std::exchange(id_, stream_id{});
  auto* s = session_if(std::exchange(session_, 0));
  if (s == nullptr) return;  // the session ended: the backend stream is gone
  try {
    std::lock_guard lock(s->mutex);
    const auto it = s->streams.find(id);
    if (it == s->streams.end()) return;
    if (it->second.owned) s->device->destroy_stream(it->second.target());
    s->streams.erase(it);
    if (s->logging()) s->emit(stream_destroy{id});
  } catch (const std::exception& e) {
    std::cerr << "streamsan: destroying " << to_string(id) << ": " << e.what() << '\n';
  }
}

// ---- current and default streams ----

stream_ref current_stream(int device) {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  const int d = s.resolve_device(device, [] { return std::string("current_stream"); });
  return s.ref(s.current_stream(d));
}

void set_stream(stream_ref ref) {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  const auto& st = s.stream(ref, [&] { return "set_stream(" + ref.name() + ")"; });
  auto& t = s.thread();
  t.device = st.device;  // S-STREAM-8
  t.current[static_cast<std::size_t>(st.device)] = st.id;
}

stream_ref default_stream(int device) {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  const int d = s.resolve_device(device, [] { return std::string("default_stream"); });
  return s.ref(s.default_stream(d));
}

stream_ref legacy_default_stream(int device) {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  const int d = s.resolve_device(device, [] { return std::string("legacy_default_stream"); });
  return s.ref(s.legacy_stream(d));
}

stream_ref per_thread_default_stream(int device) {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  const int d = s.resolve_device(device, [] { return std::string("per_thread_default_stream"); });
  return s.ref(s.per_thread_stream(d));
}

priority_range stream_priority_range(int device) {
  auto& s = enter();
  const int d = s.resolve_device(device, [] { return std::string("stream_priority_range"); });
  return s.device->stream_priority_range(d);
}

stream_ref external_stream(stream_handle handle, int device, bool non_blocking) {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  const int d = s.resolve_device(device, [] { return std::string("external_stream"); });
  // A linear scan at wrap time only; see the header.
  for (const auto& [id, st] : s.streams) {
    if (st.device == d && st.handle == handle) return s.ref(st);
  }
  return s.ref(s.add_stream(d, non_blocking ? stream_flavor::non_blocking : stream_flavor::blocking,
                            0, handle, false));
}

}  // namespace streamsan::rt
