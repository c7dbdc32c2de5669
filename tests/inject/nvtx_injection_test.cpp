// streamsan's NVTX tool receives the program's ranges and marks through
// NVTX's own injection mechanism: this test program links the tool
// statically (NVTX looks for InitializeInjectionNvtx2_fnptr before it looks
// at NVTX_INJECTION64_PATH), so no CUDA or GPU is needed.
#include <gtest/gtest.h>
#include <nvtx3/nvToolsExt.h>

#include <string>
#include <vector>

#include "inject/nvtx/nvtx_injection.h"

namespace {

struct recording_listener : streamsan::nvtx::listener {
  std::vector<std::string> events;
  void range_pushed(std::string_view m) override { events.push_back("push " + std::string(m)); }
  void range_popped() override { events.emplace_back("pop"); }
  void marked(std::string_view m) override { events.push_back("mark " + std::string(m)); }
  void unmodelled(std::string_view api) override {
    events.push_back("unmodelled " + std::string(api));
  }
};

recording_listener& recorder() {
  static recording_listener r;
  return r;
}

}  // namespace

// nvtx_static_injection.cpp points NVTX's InitializeInjectionNvtx2_fnptr here.
extern "C" int streamsan_test_initialize_nvtx(const void* get_export_table) {
  return streamsan::nvtx::install_nvtx_injection(get_export_table, recorder());
}

TEST(NvtxInjection, PushPopAndMarkArriveInOrder) {
  recorder().events.clear();
  nvtxRangePushA("forward");
  nvtxMarkA("checkpoint");
  nvtxRangePushW(L"attention");
  nvtxRangePop();
  nvtxRangePop();
  EXPECT_EQ(recorder().events,
            (std::vector<std::string>{"push forward", "mark checkpoint", "push attention", "pop",
                                      "pop"}));
}

TEST(NvtxInjection, EventAttributesAndRegisteredStringsReadAsText) {
  recorder().events.clear();
  nvtxDomainHandle_t domain = nvtxDomainCreateA("training");
  nvtxStringHandle_t name = nvtxDomainRegisterStringA(domain, "optimizer step");
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = name;
  nvtxDomainRangePushEx(domain, &a);
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "loss";
  nvtxDomainMarkEx(domain, &a);
  nvtxDomainRangePop(domain);
  nvtxDomainDestroy(domain);
  EXPECT_EQ(recorder().events,
            (std::vector<std::string>{"push optimizer step", "mark loss", "pop"}));
}

TEST(NvtxInjection, StartEndRangesAreListedAsUnmodelled) {
  recorder().events.clear();
  const nvtxRangeId_t id = nvtxRangeStartA("io");
  nvtxRangeEnd(id);
  EXPECT_EQ(recorder().events, (std::vector<std::string>{"unmodelled nvtxRangeStartA"}));
}
