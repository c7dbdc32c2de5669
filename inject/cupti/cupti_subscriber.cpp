#include "inject/cupti/cupti_subscriber.h"

#include <cupti.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtSync.h>
#include <generated_nvtx_meta.h>

#include <stdexcept>
#include <string>

namespace streamsan::injection {
namespace {

// Inside streamsan: our own driver calls (the model's queries) are not the
// program's.
thread_local bool busy = false;

class busy_guard {
 public:
  busy_guard() noexcept { busy = true; }
  busy_guard(const busy_guard&) = delete;
  busy_guard& operator=(const busy_guard&) = delete;
  ~busy_guard() { busy = false; }
};

void CUPTIAPI trampoline(void* self, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                         const void* data) {
  if (busy) return;
  busy_guard guard;
  static_cast<cupti_subscriber*>(self)->on_callback(domain, cbid, data);
}

std::string cupti_error(CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return text ? text : ("CUPTI error " + std::to_string(static_cast<int>(r)));
}

void check(CUptiResult r, const char* what) {
  if (r != CUPTI_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cupti_error(r));
}

// Note [Unmodelled calls are listed, inert calls are not]: no callbacks at
// all for calls that need nothing, nor for those their driver call models
// (Note [Launches without their runtime callback]).
void switch_off_unneeded(const api_dispatcher& dispatcher, CUpti_SubscriberHandle subscriber,
                      CUpti_CallbackDomain cupti_domain, api_domain domain, std::uint32_t size) {
  for (std::uint32_t cbid = 1; cbid < size; ++cbid) {
    if (dispatcher.switched_off(domain, cbid)) cuptiEnableCallback(0, subscriber, cupti_domain, cbid);
  }
}

// Message text of an NVTX event attribute (ASCII and wide; registered
// strings have no text we can read).
std::string narrow(const wchar_t* w) {
  std::string out;
  for (; w && *w; ++w) out.push_back(*w < 0x80 ? static_cast<char>(*w) : '?');
  return out;
}

std::string nvtx_message(const nvtxEventAttributes_t* attr) {
  if (attr == nullptr) return {};
  if (attr->messageType == NVTX_MESSAGE_TYPE_ASCII && attr->message.ascii) {
    return attr->message.ascii;
  }
  if (attr->messageType == NVTX_MESSAGE_TYPE_UNICODE && attr->message.unicode) {
    return narrow(attr->message.unicode);
  }
  return "<registered string>";
}

template <class P>
const P& nvtx_params(const void* data) {
  return *static_cast<const P*>(static_cast<const CUpti_NvtxData*>(data)->functionParams);
}

}  // namespace

cupti_subscriber::cupti_subscriber(api_dispatcher& dispatcher, cuda_model& model,
                                   call_site_source& call_sites)
    : dispatcher_(dispatcher), model_(model), call_sites_(call_sites) {}

// Note [Enabling once]
// Two threads can get here at once: the program's first NVTX call
// (InitializeInjectionNvtx2, try_enable) and cuInit (InitializeInjection,
// enable). CUPTI allows one subscriber, so a second cuptiSubscribe would fail
// and end the program. One mutex makes enabling happen once; a failed
// attempt (CUPTI may refuse before cuInit) keeps the subscription and leaves
// the next call to finish the job. The NVTX path never waits for the cuInit
// path (try_lock): cuInit's enable() must not return before the callbacks
// are on, but the first NVTX call can go on without them.
void cupti_subscriber::enable() {
  const std::lock_guard lock(enable_mutex_);
  enable_locked();
}

bool cupti_subscriber::try_enable() noexcept {
  const std::unique_lock lock(enable_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  try {
    enable_locked();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

void cupti_subscriber::enable_locked() {
  if (enabled_) return;
  // A second attempt (the first failed half-way) reuses the subscription:
  // CUPTI allows only one subscriber.
  auto subscriber = static_cast<CUpti_SubscriberHandle>(subscriber_);
  if (subscriber == nullptr) {
    check(cuptiSubscribe(&subscriber, trampoline, this), "cuptiSubscribe");
    subscriber_ = subscriber;
  }
  check(cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API), "enabling runtime callbacks");
  check(cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API), "enabling driver callbacks");
  // Of the resource domain only what invalidates kernel handles (the whole
  // domain calls back on every launch).
  check(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                            CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING),
        "enabling module unload callbacks");
  check(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                            CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING),
        "enabling context destroy callbacks");
  switch_off_unneeded(dispatcher_, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, api_domain::runtime,
                   CUPTI_RUNTIME_TRACE_CBID_SIZE);
  switch_off_unneeded(dispatcher_, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, api_domain::driver,
                   CUPTI_DRIVER_TRACE_CBID_SIZE);
  // NVTX callbacks arrive only when NVTX_INJECTION64_PATH leads to CUPTI
  // (streamsan run sets it); failing to enable them is not fatal.
  cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_NVTX);
  enabled_ = true;
  dispatcher_.start();
}

cupti_callback_counts cupti_subscriber::callbacks_received() const noexcept {
  const auto count = [this](CUpti_CallbackDomain d) {
    return received_[d].load(std::memory_order_relaxed);
  };
  return {count(CUPTI_CB_DOMAIN_RUNTIME_API), count(CUPTI_CB_DOMAIN_DRIVER_API),
          count(CUPTI_CB_DOMAIN_RESOURCE), count(CUPTI_CB_DOMAIN_NVTX)};
}

void cupti_subscriber::on_callback(std::uint32_t domain, std::uint32_t cbid, const void* data) {
  if (domain < received_.size()) received_[domain].fetch_add(1, std::memory_order_relaxed);
  try {
    switch (domain) {
      // Even while stopped: Note [Nesting is tracked while stopped].
      case CUPTI_CB_DOMAIN_RUNTIME_API:
      case CUPTI_CB_DOMAIN_DRIVER_API: on_api(domain, cbid, data); break;
      case CUPTI_CB_DOMAIN_NVTX:
        if (dispatcher_.active()) on_nvtx(cbid, data);
        break;
      // Kernel handles die with their module whether or not we model.
      case CUPTI_CB_DOMAIN_RESOURCE: on_resource(cbid); break;
      default: break;
    }
  } catch (...) {
    // Nothing may escape into the driver; a failure to model one call is
    // not worth aborting the program for.
  }
}

void cupti_subscriber::on_api(std::uint32_t domain, std::uint32_t cbid, const void* data) {
  const auto* d = static_cast<const CUpti_CallbackData*>(data);
  dispatcher_.dispatch(api_call{
      .domain = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? api_domain::runtime : api_domain::driver,
      .cbid = cbid,
      .site = d->callbackSite == CUPTI_API_ENTER ? api_site::entry : api_site::exit,
      .params = d->functionParams,
      .return_value = d->functionReturnValue,
      .function_name = d->functionName,
  });
}

void cupti_subscriber::on_nvtx(std::uint32_t cbid, const void* data) {
  const auto here = [&] { return call_sites_.capture(path_key(path_domain::nvtx, cbid, 0, 0)); };
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      return model_.range_pushed(here(), nvtx_params<nvtxRangePushA_params>(data).message);
    case CUPTI_CBID_NVTX_nvtxRangePushW:
      return model_.range_pushed(here(), narrow(nvtx_params<nvtxRangePushW_params>(data).message));
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      return model_.range_pushed(
          here(), nvtx_message(nvtx_params<nvtxRangePushEx_params>(data).eventAttrib));
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      return model_.range_pushed(
          here(), nvtx_message(nvtx_params<nvtxDomainRangePushEx_params>(data).core.eventAttrib));
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      return model_.range_popped(here());
    case CUPTI_CBID_NVTX_nvtxMarkA:
      return model_.marked(here(), nvtx_params<nvtxMarkA_params>(data).message);
    case CUPTI_CBID_NVTX_nvtxMarkW:
      return model_.marked(here(), narrow(nvtx_params<nvtxMarkW_params>(data).message));
    case CUPTI_CBID_NVTX_nvtxMarkEx:
      return model_.marked(here(), nvtx_message(nvtx_params<nvtxMarkEx_params>(data).eventAttrib));
    case CUPTI_CBID_NVTX_nvtxDomainMarkEx:
      return model_.marked(
          here(), nvtx_message(nvtx_params<nvtxDomainMarkEx_params>(data).core.eventAttrib));
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
    case CUPTI_CBID_NVTX_nvtxRangeStartW:
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd: {
      // Start/end ranges are not nested: not representable as push/pop.
      const char* name = static_cast<const CUpti_NvtxData*>(data)->functionName;
      return model_.unmodelled(here(), name ? name : "nvtxRange");
    }
    default:
      return;  // naming, domains, sync objects: nothing to order
  }
}

void cupti_subscriber::on_resource(std::uint32_t cbid) {
  if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING ||
      cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    model_.modules_unloaded();
  }
}

}  // namespace streamsan::injection
