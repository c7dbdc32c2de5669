#include "sanitizer/tsan/active_bridge.h"

#include <atomic>

namespace streamsan::tsan {
namespace {

std::atomic<tsan_bridge*> active{nullptr};

}  // namespace

// The bridge registers itself (tsan_bridge.cpp).
void set_active_bridge(tsan_bridge* bridge) noexcept {
  active.store(bridge, std::memory_order_release);
}

void clear_active_bridge(tsan_bridge* bridge) noexcept {
  tsan_bridge* expected = bridge;
  active.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
}

tsan_bridge* active_bridge() noexcept { return active.load(std::memory_order_acquire); }

simulated_device_scope::simulated_device_scope() noexcept {
  if (tsan_bridge* b = active_bridge()) {
    api_ = &b->api();
    api_->ignore_thread_begin();
  }
}

simulated_device_scope::~simulated_device_scope() {
  if (api_ != nullptr) api_->ignore_thread_end();
}

host_function_body::host_function_body(stream_id stream, bool announced) noexcept
    : bridge_(active_bridge()) {
  if (bridge_ == nullptr) return;
  try {
    ticket_ = announced ? bridge_->begin_host_function(stream)
                        : bridge_->begin_unannounced_host_function();
  } catch (...) {
    bridge_ = nullptr;  // out of memory: the body runs as the thread's own code
  }
}

host_function_body::~host_function_body() {
  if (bridge_ == nullptr) return;
  try {
    bridge_->end_host_function(std::move(ticket_));
  } catch (...) {
  }
}

}  // namespace streamsan::tsan
