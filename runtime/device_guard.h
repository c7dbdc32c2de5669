// Scoped current device (torch.cuda.device): sets it, restores the previous
// one on exit. A negative index is a no-op (S-DEV-1).
#pragma once

namespace streamsan::rt {

class device_guard {
 public:
  explicit device_guard(int device);
  ~device_guard() noexcept;
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

  // The device that was current on entry (-1 when the guard is a no-op).
  int previous() const noexcept { return previous_; }

 private:
  int previous_ = -1;
};

}  // namespace streamsan::rt
