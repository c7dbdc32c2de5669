#include "tests/inject/fake_cupti.h"

#include <thread>

namespace streamsan::injection::fake_cupti {
namespace {

state* the_state = new state;  // lives until the process ends

}  // namespace

state& reset() {
  std::lock_guard lock(the_state->mutex);
  the_state->subscribe_calls = 0;
  the_state->callback = nullptr;
  the_state->userdata = nullptr;
  the_state->callbacks.clear();
  the_state->domains.clear();
  the_state->subscribe_delay = {};
  the_state->failing_domain_enables = 0;
  return *the_state;
}

state& current() { return *the_state; }

void deliver(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  the_state->callback(the_state->userdata, domain, cbid, data);
}

}  // namespace streamsan::injection::fake_cupti

using streamsan::injection::fake_cupti::current;

// CUPTI allows one subscriber: a second cuptiSubscribe fails.
CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                    void* userdata) {
  auto& s = current();
  std::this_thread::sleep_for(s.subscribe_delay);
  std::lock_guard lock(s.mutex);
  if (++s.subscribe_calls > 1) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  s.callback = callback;
  s.userdata = userdata;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&s);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle,
                                       CUpti_CallbackDomain domain) {
  auto& s = current();
  std::lock_guard lock(s.mutex);
  if (s.failing_domain_enables > 0) {
    --s.failing_domain_enables;
    return CUPTI_ERROR_NOT_INITIALIZED;
  }
  s.domains.emplace_back(enable, domain);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  auto& s = current();
  std::lock_guard lock(s.mutex);
  s.callbacks.emplace_back(enable, domain, cbid);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char** str) {
  *str = result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "multiple subscribers"
         : result == CUPTI_ERROR_NOT_INITIALIZED                  ? "not initialized"
                                                                  : "fake CUPTI error";
  return CUPTI_SUCCESS;
}
