#include "runtime/event.h"

#include <iostream>
#include <utility>

#include "runtime/session/session.h"
#include "runtime/stream.h"

namespace streamsan::rt {
namespace {

// The capture the event's latest record went into, if it is still capturing.
runtime_capture* capture_of(session& s, const event_state& e) {
  if (is_none(e.capture)) return nullptr;
  const auto it = s.graphs.find(e.capture);
  return it == s.graphs.end() ? nullptr : it->second.capture.get();
}

}  // namespace

std::string event_ref::name() const { return to_string(id_); }

std::uint32_t event_ref::flags() const {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  return s.event(*this, [&] { return "flags of " + name(); }).flags;
}

std::optional<int> event_ref::device() const {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  return s.event(*this, [&] { return "device of " + name(); }).device;
}

void event_ref::record() const { record(current_stream()); }

void event_ref::record(const stream_ref& target) const {
  auto& s = enter();
  const auto what = [&] { return "recording " + name() + " on " + target.name(); };
  std::lock_guard lock(s.mutex);
  auto& e = s.event(*this, what);
  auto& st = s.stream(target, what);
  if (e.device && *e.device != st.device) {  // S-EVENT-6
    throw usage_error(what() + ": stream belongs to device " + std::to_string(st.device) +
                      ", event to device " + std::to_string(*e.device));
  }
  s.check_implicit_capture(st, what);
  if (!e.handle) {  // created lazily, on the recording stream's device
    e.handle = s.device->create_event(st.device, e.flags);
    e.device = st.device;
  }
  if (auto* old = capture_of(s, e)) old->forget_event(e.id);
  e.capture = graph_id{};
  s.device->record_event(*e.handle, st.target());
  if (auto* capture = s.capture_of(st)) {
    capture->record_event(st.id, e.id);
    e.capture = st.capture;
    return;  // Note [Captured work is not logged as executed]
  }
  e.recorded = true;
  if (s.logging()) s.emit(event_record{e.id, st.id});
}

void event_ref::wait() const { wait(current_stream()); }

void event_ref::wait(const stream_ref& target) const {
  auto& s = enter();
  const auto what = [&] { return "waiting on " + name() + " on " + target.name(); };
  std::lock_guard lock(s.mutex);
  auto& e = s.event(*this, what);
  auto& st = s.stream(target, what);
  if (auto* capture = capture_of(s, e)) {
    s.device->stream_wait_event(st.target(), *e.handle);
    capture->wait_event(st.id, e.id);  // st joins the capture
    st.capture = e.capture;
    return;
  }
  if (!streamsan::is_none(st.capture) && e.recorded) {
    throw usage_error(what() + ": " + target.name() + " is capturing " + to_string(st.capture) +
                      " and " + name() + " was recorded outside the capture");
  }
  // Never recorded: orders nothing (S-EVENT-3), but the log keeps the wait.
  if (e.handle) s.device->stream_wait_event(st.target(), *e.handle);
  if (!streamsan::is_none(st.capture)) return;
  if (s.logging()) s.emit(event_wait{e.id, st.id});
}

bool event_ref::query() const {
  auto& s = enter();
  const auto what = [&] { return "querying " + name(); };
  std::lock_guard lock(s.mutex);
  auto& e = s.event(*this, what);
  if (capture_of(s, e) != nullptr) {
    throw usage_error(what() + ": it was recorded into " + to_string(e.capture) +
                      ", which is still capturing (S-GRAPH-1)");
  }
  const bool complete = e.handle ? s.device->query_event(*e.handle) : true;
  if (s.logging()) s.emit(event_query{e.id, complete});
  return complete;
}

void event_ref::synchronize() const {
  auto& s = enter();
  const auto what = [&] { return name() + ".synchronize()"; };
  std::unique_lock lock(s.mutex);
  auto& e = s.event(*this, what);
  if (capture_of(s, e) != nullptr) {
    throw usage_error(what() + ": it was recorded into " + to_string(e.capture) +
                      ", which is still capturing (S-GRAPH-1)");
  }
  s.check_sync(what);
  const auto handle = e.handle;
  lock.unlock();  // Note [One mutex orders the runtime]: waiting only
  if (handle) s.device->synchronize_event(*handle);
  lock.lock();
  if (s.logging()) s.emit(event_synchronize{id_});
}

float event_ref::elapsed_time(const event_ref& end) const {
  auto& s = enter();
  const auto what = [&] { return "elapsed_time(" + name() + ", " + end.name() + ")"; };
  std::lock_guard lock(s.mutex);
  const auto& a = s.event(*this, what);
  const auto& b = s.event(end, what);
  for (const auto* e : {&a, &b}) {
    if ((e->flags & event_flag_timing) == 0) {
      throw usage_error(what() + ": " + to_string(e->id) +
                        " was created without timing (event_options::enable_timing)");
    }
  }
  for (const auto* e : {&a, &b}) {
    if (!e->recorded) throw usage_error(what() + ": " + to_string(e->id) + " was never recorded");
  }
  for (const auto* e : {&a, &b}) {
    if (!s.device->query_event(*e->handle)) {
      throw usage_error(what() + ": " + to_string(e->id) +
                        " has not completed (synchronize it first)");
    }
  }
  return s.device->elapsed_time(*a.handle, *b.handle);
}

// ---- event ----

event::event(event_options options) {
  auto& s = enter();
  if (options.interprocess && options.enable_timing) {
    throw usage_error(
        "creating an event: an interprocess event cannot have timing enabled (CUDA requires "
        "cudaEventDisableTiming with cudaEventInterprocess)");
  }
  std::uint32_t flags = event_flag_none;
  if (options.enable_timing) flags |= event_flag_timing;
  if (options.blocking) flags |= event_flag_blocking_sync;
  if (options.interprocess) flags |= event_flag_interprocess;
  std::lock_guard lock(s.mutex);
  const auto id = s.log.new_event_id();
  s.events.emplace(id, event_state{id, flags, std::nullopt, std::nullopt, false, graph_id{}});
  if (s.logging()) s.emit(event_create{id, flags});
  id_ = id;
  session_ = s.number;
}

event::event(event&& other) noexcept
    : event_ref(std::exchange(other.id_, event_id{}), std::exchange(other.session_, 0)) {}

event& event::operator=(event&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = std::exchange(other.id_, event_id{});
    session_ = std::exchange(other.session_, 0);
  }
  return *this;
}

event::~event() noexcept { reset(); }

event_ref event::release() noexcept {
  const event_ref ref = *this;
  id_ = event_id{};
  session_ = 0;
  return ref;
}

void event::reset() noexcept {
  if (is_none()) return;
  const auto id = std::exchange(id_, event_id{});
  auto* s = session_if(std::exchange(session_, 0));
  if (s == nullptr) return;
  try {
    std::lock_guard lock(s->mutex);
    const auto it = s->events.find(id);
    if (it == s->events.end()) return;
    if (auto* capture = capture_of(*s, it->second)) capture->forget_event(id);
    if (it->second.handle) s->device->destroy_event(*it->second.handle);
    s->events.erase(it);
    if (s->logging()) s->emit(event_destroy{id});
  } catch (const std::exception& e) {
    std::cerr << "streamsan: destroying " << to_string(id) << ": " << e.what() << '\n';
  }
}

}  // namespace streamsan::rt
