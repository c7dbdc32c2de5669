// The fixture of the cuda backend conformance tests: a cuda backend on device
// 0 plus owned streams, events and device buffers that are released, in a
// synchronized device, after each test. Everything goes through the backend
// interface (runtime/backend/backend.h), never through cudart directly, so
// the tests check the contract, not CUDA.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "runtime/backend/backend.h"

namespace streamsan::rt::testing {

class CudaBackend : public ::testing::Test {
 protected:
  static constexpr int device_ = 0;

  void TearDown() override {
    backend_->synchronize_device(device_);
    for (const auto& [kind, ptr] : allocations_) {
      backend_->deallocate(kind, device_, ptr, legacy());
    }
    for (const event_handle e : events_) backend_->destroy_event(e);
    for (const device_stream s : streams_) backend_->destroy_stream(s);
    backend_->synchronize_device(device_);
  }

  backend& b() { return *backend_; }

  device_stream legacy() { return {device_, backend_->legacy_default_stream(device_)}; }
  device_stream per_thread() { return {device_, backend_->per_thread_default_stream(device_)}; }

  device_stream make_stream(bool non_blocking = true, int priority = 0) {
    const device_stream s{device_, backend_->create_stream(device_, non_blocking, priority)};
    streams_.push_back(s);
    return s;
  }

  event_handle make_event(std::uint32_t flags = event_flag_none) {
    const event_handle e = backend_->create_event(device_, flags);
    events_.push_back(e);
    return e;
  }

  // `count` floats of `kind`, freed after the test; zeroed unless host memory.
  float* floats(std::uint64_t count, memory_kind kind = memory_kind::device) {
    void* p = backend_->allocate(kind, device_, count * sizeof(float), legacy());
    if (p == nullptr) throw std::runtime_error("the backend returned no memory");
    allocations_.emplace_back(kind, p);
    if (kind == memory_kind::device || kind == memory_kind::managed) {
      backend_->memset({p, 0, count * sizeof(float), kind, false, legacy()});
    }
    return static_cast<float*>(p);
  }

  // Synchronous copies between device memory and a host vector (cudaMemcpy
  // on the legacy default stream).
  std::vector<float> read(const float* device_ptr, std::uint64_t count) {
    std::vector<float> host(count);
    copy_request r;
    r.dst = host.data();
    r.src = device_ptr;
    r.bytes = count * sizeof(float);
    r.dst_kind = memory_kind::pageable_host;
    r.src_kind = memory_kind::device;
    r.stream = legacy();
    backend_->memcpy(r);
    return host;
  }
  float read_one(const float* device_ptr) { return read(device_ptr, 1)[0]; }

  void write(float* device_ptr, const std::vector<float>& values) {
    copy_request r;
    r.dst = device_ptr;
    r.src = values.data();
    r.bytes = values.size() * sizeof(float);
    r.dst_kind = memory_kind::device;
    r.src_kind = memory_kind::pageable_host;
    r.stream = legacy();
    backend_->memcpy(r);
  }

  void launch(device_stream s, const kernel_args& args) { backend_->launch_kernel(s, args); }

  void spin(device_stream s, std::chrono::nanoseconds duration) {
    launch(s, spin_args{static_cast<std::uint64_t>(duration.count())});
  }

  // A late producer on `s`: spins for `delay`, then x[0] = value. See Note
  // [Racing against a spin] in streams_test.cpp.
  void produce_late(device_stream s, float* x, float value,
                    std::chrono::nanoseconds delay = std::chrono::milliseconds(30)) {
    spin(s, delay);
    launch(s, fill_args{x, 1, value});
  }

 private:
  std::unique_ptr<backend> backend_ = make_cuda_backend();
  std::vector<device_stream> streams_;
  std::vector<event_handle> events_;
  std::vector<std::pair<memory_kind, void*>> allocations_;
};

}  // namespace streamsan::rt::testing
