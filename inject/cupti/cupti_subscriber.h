// The CUPTI source: subscribes to CUPTI's callbacks and hands runtime and
// driver calls to the dispatcher (Note [One table for every source]); NVTX
// ranges and marks, and the resource callbacks that retire kernel handles,
// it models itself. The only component that includes cupti.h.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "inject/capture/call_sites.h"
#include "inject/capture/dispatcher.h"
#include "inject/model/cuda_model.h"

namespace streamsan::injection {

// Callbacks received per CUPTI domain (for STREAMSAN_DEBUG).
struct cupti_callback_counts {
  std::uint64_t runtime = 0;
  std::uint64_t driver = 0;
  std::uint64_t resource = 0;
  std::uint64_t nvtx = 0;
};

class cupti_subscriber {
 public:
  cupti_subscriber(api_dispatcher& dispatcher, cuda_model& model, call_site_source& call_sites);
  cupti_subscriber(const cupti_subscriber&) = delete;
  cupti_subscriber& operator=(const cupti_subscriber&) = delete;

  // Subscribes and enables the runtime, driver, NVTX and resource domains,
  // then starts the dispatcher, once (Note [Enabling once]). Throws
  // std::runtime_error with CUPTI's message on failure; a later call tries
  // again.
  void enable();
  // enable() unless another thread is enabling right now; false when it did
  // not get enabled (that thread's enable() finishes the job or throws).
  bool try_enable() noexcept;

  cupti_callback_counts callbacks_received() const noexcept;

  // Entry for CUPTI (public for the C callback trampoline).
  void on_callback(std::uint32_t domain, std::uint32_t cbid, const void* data);

 private:
  void on_api(std::uint32_t domain, std::uint32_t cbid, const void* data);
  void on_nvtx(std::uint32_t cbid, const void* data);
  void on_resource(std::uint32_t cbid);
  void enable_locked();

  api_dispatcher& dispatcher_;
  cuda_model& model_;
  call_site_source& call_sites_;
  std::array<std::atomic<std::uint64_t>, 8> received_{};
  std::mutex enable_mutex_;
  bool enabled_ = false;     // under enable_mutex_
  void* subscriber_ = nullptr;  // under enable_mutex_
};

}  // namespace streamsan::injection
