// Streams (S-STREAM-*, S-DEFAULT-*): a value-type stream_ref, the move-only
// owning stream, and the per-thread current stream.
//
// Note [Refs name objects by id]
// A stream_ref holds the stream's streamsan id, its device and the runtime
// session that created it; every operation looks the id up in the runtime's
// registry. A ref to a destroyed stream therefore fails cleanly ("waiting on
// stream#4: stream#4 was destroyed") instead of touching a recycled handle.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/backend/device_properties.h"
#include "runtime/backend/handles.h"
#include "sanitizer/log/ids.h"
#include "sanitizer/log/record.h"

namespace streamsan::rt {

class event;
class event_ref;

class stream_ref {
 public:
  // No stream; every operation throws usage_error.
  stream_ref() = default;

  stream_id id() const noexcept { return id_; }
  int device() const noexcept { return device_; }
  bool is_none() const noexcept { return streamsan::is_none(id_); }
  // "stream#3".
  std::string name() const;

  stream_flavor flavor() const;
  int priority() const;
  // The backend's handle (on cuda a cudaStream_t bit-cast to an integer).
  stream_handle native_handle() const;

  // True iff all work submitted so far has completed (S-STREAM-4). A true
  // answer orders that work before the host (S-SYNC-2).
  bool query() const;
  // Blocks until all submitted work has completed (S-STREAM-5).
  void synchronize() const;
  // Future work on this stream waits for the work `e` captured (S-EVENT-2).
  void wait_event(const event_ref& e) const;
  // Future work on this stream waits for the work submitted to `other` so far
  // (S-STREAM-6). Does not block the host.
  void wait_stream(stream_ref other) const;
  // Records `e` on this stream (S-EVENT-1).
  void record_event(const event_ref& e) const;
  // Records a new event (no flags) on this stream and returns it.
  event record_event() const;
  // True while this stream captures a graph (S-GRAPH-1).
  bool is_capturing() const;

  friend bool operator==(const stream_ref&, const stream_ref&) = default;

 protected:
  stream_ref(stream_id id, int device, std::uint64_t session) noexcept
      : id_(id), device_(device), session_(session) {}
  friend struct stream_access;  // runtime internals build refs

  stream_id id_{};
  int device_ = 0;
  std::uint64_t session_ = 0;
};

struct stream_options {
  int device = -1;   // -1: the current device
  int priority = 0;  // clamped to stream_priority_range (lower = higher priority)
  // torch.cuda.Stream creates non-blocking streams: they do not synchronize
  // with the legacy default stream (S-DEFAULT-2). false = cudaStreamDefault.
  bool non_blocking = true;
};

// An owning stream. Destroying it with pending work returns at once; the
// work still completes (S-STREAM-9).
class stream : public stream_ref {
 public:
  explicit stream(stream_options options = {});
  stream(stream&& other) noexcept;
  stream& operator=(stream&& other) noexcept;
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  ~stream() noexcept;

  stream_ref ref() const noexcept { return *this; }
  // Gives up ownership: the stream lives until the session ends.
  stream_ref release() noexcept;

 private:
  void reset() noexcept;
};

// The calling thread's current stream on `device` (-1: current device);
// default_stream(device) until set_stream / a stream_guard changes it.
stream_ref current_stream(int device = -1);
// Makes `s` the current stream of its device and `s.device()` the current
// device (S-STREAM-8).
void set_stream(stream_ref s);

// The legacy default stream, or the calling thread's per-thread default
// stream when runtime_options::per_thread_default_stream is set.
stream_ref default_stream(int device = -1);
// Stream 0 / cudaStreamLegacy of `device` (S-DEFAULT-1).
stream_ref legacy_default_stream(int device = -1);
// cudaStreamPerThread of the calling thread (S-DEFAULT-3). Use the ref only
// on the thread that got it.
stream_ref per_thread_default_stream(int device = -1);

// {least, greatest} priority of `device`'s streams (S-STREAM-7).
priority_range stream_priority_range(int device = -1);

// Wraps a stream the program created itself (torch.cuda.ExternalStream):
// the runtime gives it an id and never destroys it. When a live stream of
// the session already has this handle, that stream is returned instead.
stream_ref external_stream(stream_handle handle, int device = -1, bool non_blocking = false);

}  // namespace streamsan::rt
