#include "inject/nvtx/nvtx_injection.h"

#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cwchar>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace streamsan::nvtx {
namespace {

std::atomic<listener*> target{nullptr};

// Handles NVTX hands back to the program for domains and registered
// strings: they live until the process ends (NVTX never frees them either).
struct owned_text {
  std::string text;
};
std::mutex handles_mutex;
std::vector<std::unique_ptr<owned_text>>& handles() {
  static auto* h = new std::vector<std::unique_ptr<owned_text>>;
  return *h;
}
owned_text* own(std::string text) {
  std::lock_guard lock(handles_mutex);
  handles().push_back(std::make_unique<owned_text>(owned_text{std::move(text)}));
  return handles().back().get();
}

std::string narrow(const wchar_t* w) {
  std::string out;
  for (; w != nullptr && *w != 0; ++w) out.push_back(*w < 0x80 ? static_cast<char>(*w) : '?');
  return out;
}

std::string message_of(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return {};
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE: return narrow(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return a->message.registered
                 ? reinterpret_cast<const owned_text*>(a->message.registered)->text
                 : std::string();
    default: return {};
  }
}

template <class F>
void with_listener(F&& f) {
  if (auto* l = target.load(std::memory_order_acquire)) f(*l);
}

// ---- handlers (NVTX's own signatures) ----
// The depth a push returns is not tracked: 0 is what NVTX returns when no
// tool counts it.
int NVTX_API push_a(const char* m) {
  with_listener([&](listener& l) { l.range_pushed(m ? m : ""); });
  return 0;
}
int NVTX_API push_w(const wchar_t* m) {
  with_listener([&](listener& l) { l.range_pushed(narrow(m)); });
  return 0;
}
int NVTX_API push_ex(const nvtxEventAttributes_t* a) {
  with_listener([&](listener& l) { l.range_pushed(message_of(a)); });
  return 0;
}
int NVTX_API pop() {
  with_listener([](listener& l) { l.range_popped(); });
  return 0;
}
void NVTX_API mark_a(const char* m) {
  with_listener([&](listener& l) { l.marked(m ? m : ""); });
}
void NVTX_API mark_w(const wchar_t* m) {
  with_listener([&](listener& l) { l.marked(narrow(m)); });
}
void NVTX_API mark_ex(const nvtxEventAttributes_t* a) {
  with_listener([&](listener& l) { l.marked(message_of(a)); });
}
nvtxRangeId_t NVTX_API start_a(const char*) {
  with_listener([](listener& l) { l.unmodelled("nvtxRangeStartA"); });
  return 0;
}
nvtxRangeId_t NVTX_API start_w(const wchar_t*) {
  with_listener([](listener& l) { l.unmodelled("nvtxRangeStartW"); });
  return 0;
}
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t*) {
  with_listener([](listener& l) { l.unmodelled("nvtxRangeStartEx"); });
  return 0;
}
void NVTX_API range_end(nvtxRangeId_t) {}

int NVTX_API domain_push_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) {
  return push_ex(a);
}
int NVTX_API domain_pop(nvtxDomainHandle_t) { return pop(); }
void NVTX_API domain_mark_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) { mark_ex(a); }
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t*) {
  with_listener([](listener& l) { l.unmodelled("nvtxDomainRangeStartEx"); });
  return 0;
}
void NVTX_API domain_end(nvtxDomainHandle_t, nvtxRangeId_t) {}
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(own(name ? name : ""));
}
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(own(narrow(name)));
}
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}
nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(own(s ? s : ""));
}
nvtxStringHandle_t NVTX_API register_string_w(nvtxDomainHandle_t, const wchar_t* s) {
  return reinterpret_cast<nvtxStringHandle_t>(own(narrow(s)));
}

using slot_table = NvtxFunctionTable;

template <class F>
void set(slot_table table, unsigned size, unsigned id, F f) {
  if (id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(f);
}

bool install_core(const NvtxExportTableCallbacks& callbacks) {
  slot_table t = nullptr;
  unsigned n = 0;
  if (!callbacks.GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || t == nullptr) return false;
  set(t, n, NVTX_CBID_CORE_MarkEx, &mark_ex);
  set(t, n, NVTX_CBID_CORE_MarkA, &mark_a);
  set(t, n, NVTX_CBID_CORE_MarkW, &mark_w);
  set(t, n, NVTX_CBID_CORE_RangeStartEx, &start_ex);
  set(t, n, NVTX_CBID_CORE_RangeStartA, &start_a);
  set(t, n, NVTX_CBID_CORE_RangeStartW, &start_w);
  set(t, n, NVTX_CBID_CORE_RangeEnd, &range_end);
  set(t, n, NVTX_CBID_CORE_RangePushEx, &push_ex);
  set(t, n, NVTX_CBID_CORE_RangePushA, &push_a);
  set(t, n, NVTX_CBID_CORE_RangePushW, &push_w);
  set(t, n, NVTX_CBID_CORE_RangePop, &pop);
  return true;
}

bool install_core2(const NvtxExportTableCallbacks& callbacks) {
  slot_table t = nullptr;
  unsigned n = 0;
  if (!callbacks.GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) || t == nullptr) return false;
  set(t, n, NVTX_CBID_CORE2_DomainMarkEx, &domain_mark_ex);
  set(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, &domain_start_ex);
  set(t, n, NVTX_CBID_CORE2_DomainRangeEnd, &domain_end);
  set(t, n, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push_ex);
  set(t, n, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
  set(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string_a);
  set(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, &register_string_w);
  set(t, n, NVTX_CBID_CORE2_DomainCreateA, &domain_create_a);
  set(t, n, NVTX_CBID_CORE2_DomainCreateW, &domain_create_w);
  set(t, n, NVTX_CBID_CORE2_DomainDestroy, &domain_destroy);
  return true;
}

}  // namespace

int install_nvtx_injection(const void* get_export_table, listener& to) {
  // A function's address handed over as data (clang refuses to cast the
  // const away and to a function pointer in one step).
  const auto get = reinterpret_cast<NvtxGetExportTableFunc_t>(const_cast<void*>(get_export_table));
  if (get == nullptr) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  target.store(&to, std::memory_order_release);
  if (!install_core(*callbacks)) return 0;
  install_core2(*callbacks);  // older NVTX: core only
  return 1;
}

}  // namespace streamsan::nvtx
