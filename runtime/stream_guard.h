// Scoped current stream (torch.cuda.stream / StreamContext): makes `s` the
// current stream of its device and its device the current device
// (S-STREAM-8); on exit restores the current device and the current stream
// of both devices involved.
#pragma once

#include "runtime/stream.h"

namespace streamsan::rt {

class stream_guard {
 public:
  explicit stream_guard(stream_ref s);
  ~stream_guard() noexcept;
  stream_guard(const stream_guard&) = delete;
  stream_guard& operator=(const stream_guard&) = delete;

 private:
  int previous_device_ = 0;
  stream_ref previous_on_previous_device_;
  stream_ref previous_on_target_device_;
};

}  // namespace streamsan::rt
