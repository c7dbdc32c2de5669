// Makes a device current for the duration of one backend call and restores
// the calling thread's previous current device afterwards (Note [Devices are
// explicit] in runtime/backend/backend.h).
//
// Note [Switching devices only when needed]
// cudaGetDevice reads a thread-local; cudaSetDevice is a driver call. On the
// hot path (a launch on the current device) the scope costs one
// cudaGetDevice and no cudaSetDevice; it switches, and switches back, only
// when the call concerns another device.
#pragma once

#include <cuda_runtime_api.h>

#include "runtime/cuda/cuda_check.h"

namespace streamsan::rt::cuda {

class device_scope {
 public:
  explicit device_scope(int device) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) {
      check(cudaSetDevice(device), "cudaSetDevice", [&] { return describe_device(device); });
      switched_ = true;
    }
  }
  ~device_scope() noexcept {
    // Restoring a device that was current a moment ago cannot fail unless
    // the context is already broken, which the next call reports.
    if (switched_) (void)cudaSetDevice(previous_);
  }
  device_scope(const device_scope&) = delete;
  device_scope& operator=(const device_scope&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace streamsan::rt::cuda
