// Whether any two pieces of the program's work can run unordered yet: the
// default mode measures first launches only from then on.
//
// Note [First launches are measured once work can overlap]
// The default mode measures a kernel's first launch on each stream so that
// a race between first launches is confirmed at once and every kernel
// learns what its pointer words do (Note [Which launches are measured] in
// inject/sanitizer_api/sanitizer_source.h). A patched launch runs many
// times slower (about 20 times for simpleAttributes' random accesses), and
// a program of a few long kernels pays that in full: one 5.6 s kernel took
// 115 s. Yet while all of a program's device work lies in one stream order,
// no two device accesses can be unordered: there is no race between them
// to confirm. The host is the exception: it runs beside every stream, and
// its accesses (an annotation, a CPU operator) are seen only when they
// happen, after the launch they race with. So while work cannot overlap, a
// first launch is measured only when a pointer word of its arguments
// points into memory the host can access (pinned, pageable, managed:
// cuda_model::launch_may_race), and every first launch is measured once
// work *can* overlap:
// - two streams of which neither orders the other exist: any two streams
//   other than a device's legacy default stream (blocking streams do not
//   order each other, nor does a per-thread default stream order them),
//   or a non-blocking stream (the legacy default stream, which every
//   synchronous copy and memset uses, does not order it), or streams on
//   two devices;
// - or a host access was observed (an annotation, a CPU operator of the
//   PyTorch support): from then on the program is taken to use the host
//   beside its streams.
// A device's legacy default stream and one blocking or per-thread default
// stream of it order each other both ways (S-DEFAULT-1), so a program
// using only those stays in one order. The watch only ever turns on: a
// destroyed stream's work may still be running. Streams count when they
// are made or first seen (a stream made out of sight, inside a library,
// at the entry of its first launch), not when given work, so a program
// that creates its streams before its first launch loses nothing. What a program whose
// work begins to overlap only later gives up: a kernel launched before
// (unmeasured) that races with work after is a candidate, confirmed if the
// kernel runs again (its next launches are measured), else listed as a
// possible race; --precise measures every launch regardless. The stream
// that stands for other processes' event records (Note [IPC events]) is
// never given work and does not count.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>

#include "sanitizer/log/record.h"

namespace streamsan::injection {

class concurrency_watch {
 public:
  // A stream of `flavor` came to be on `device` (made, or first seen).
  // Returns whether this made overlap possible. Callers serialize.
  bool stream_added(std::int32_t device, stream_flavor flavor) noexcept;
  // A host access was observed. Returns whether this made overlap possible.
  bool host_access_seen() noexcept { return turn_on(); }
  // Lock-free: the measuring source asks at every launch.
  bool overlap_possible() const noexcept { return possible_.load(std::memory_order_acquire); }

 private:
  bool turn_on() noexcept;

  std::optional<std::int32_t> device_;  // the one device with streams so far
  unsigned ordered_streams_ = 0;        // blocking and per-thread default ones
  std::atomic<bool> possible_{false};
};

}  // namespace streamsan::injection
