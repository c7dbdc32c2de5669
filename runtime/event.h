// Events (S-EVENT-*): a value-type event_ref and the move-only owning event.
//
// An event has no device until its first record, when the backend event is
// created on the recording stream's device (S-EVENT-6, lazily like
// torch.cuda.Event). Afterwards only streams of that device may record it;
// streams of any device may wait on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sanitizer/log/ids.h"
#include "sanitizer/log/record.h"

namespace streamsan::rt {

class stream_ref;

struct event_options {
  bool enable_timing = false;  // needed by elapsed_time (S-EVENT-5)
  bool blocking = false;       // a waiting host sleeps instead of spinning (S-EVENT-7)
  bool interprocess = false;   // shareable between processes; excludes timing
};

class event_ref {
 public:
  event_ref() = default;  // no event; every operation throws usage_error

  event_id id() const noexcept { return id_; }
  bool is_none() const noexcept { return streamsan::is_none(id_); }
  std::string name() const;  // "event#3"

  // streamsan::event_flags.
  std::uint32_t flags() const;
  // The device, once recorded.
  std::optional<int> device() const;

  // Records on the current stream of the current device / on `s` (S-EVENT-1).
  void record() const;
  void record(const stream_ref& s) const;
  // Makes the current stream / `s` wait for the captured work (S-EVENT-2).
  void wait() const;
  void wait(const stream_ref& s) const;
  // True iff the captured work completed; true if never recorded (S-EVENT-4).
  bool query() const;
  // Blocks until the captured work completed (S-EVENT-4).
  void synchronize() const;
  // Milliseconds from this event to `end` (S-EVENT-5). usage_error unless
  // both have timing enabled, both were recorded and both completed.
  float elapsed_time(const event_ref& end) const;

  friend bool operator==(const event_ref&, const event_ref&) = default;

 protected:
  event_ref(event_id id, std::uint64_t session) noexcept : id_(id), session_(session) {}
  friend struct event_access;

  event_id id_{};
  std::uint64_t session_ = 0;
};

class event : public event_ref {
 public:
  explicit event(event_options options = {});
  event(event&& other) noexcept;
  event& operator=(event&& other) noexcept;
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  ~event() noexcept;

  event_ref ref() const noexcept { return *this; }
  // Gives up ownership: the event lives until the session ends.
  event_ref release() noexcept;

 private:
  void reset() noexcept;
};

}  // namespace streamsan::rt
