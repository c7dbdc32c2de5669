// Stands in for libcupti in the tests of inject/cupti: the test program
// defines cuptiSubscribe and friends (fake_cupti.cpp) instead of linking
// CUPTI, so the real subscriber runs without a GPU and a test can feed it
// callbacks through the real trampoline.
#pragma once

#include <cupti.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace streamsan::injection::fake_cupti {

struct state {
  std::mutex mutex;
  int subscribe_calls = 0;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  // (enable, domain, cbid) of every cuptiEnableCallback.
  std::vector<std::tuple<std::uint32_t, CUpti_CallbackDomain, CUpti_CallbackId>> callbacks;
  std::vector<std::pair<std::uint32_t, CUpti_CallbackDomain>> domains;
  // How long cuptiSubscribe takes (a wider window for racing callers).
  std::chrono::milliseconds subscribe_delay{0};
  // The next n cuptiEnableDomain calls fail with CUPTI_ERROR_NOT_INITIALIZED.
  int failing_domain_enables = 0;
};

// Resets everything (a subscription included).
state& reset();
state& current();

// Calls the subscriber's callback as CUPTI would.
void deliver(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);

}  // namespace streamsan::injection::fake_cupti
