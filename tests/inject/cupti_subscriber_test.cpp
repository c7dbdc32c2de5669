// The CUPTI source over a fake libcupti (fake_cupti.cpp): subscribing once,
// switching callbacks on and off, and callbacks through the real trampoline.
#include "inject/cupti/cupti_subscriber.h"

#include <cupti.h>
#include <gtest/gtest.h>
#include <nvtx3/nvToolsExt.h>
#include <generated_nvtx_meta.h>

#include <algorithm>
#include <atomic>
#include <latch>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/inject/capture_sink.h"
#include "tests/inject/fake_cupti.h"
#include "tests/inject/fake_driver.h"

namespace streamsan::injection {
namespace {

CUpti_CallbackData callback_data(CUpti_ApiCallbackSite site, const char* name, const void* params,
                                 void* result) {
  CUpti_CallbackData d{};
  d.callbackSite = site;
  d.functionName = name;
  d.functionParams = params;
  d.functionReturnValue = result;
  return d;
}

// Answers a kernel query with a driver call of its own, as the real driver
// queries do: CUPTI reports it, and it is not the program's call.
class calling_driver : public fake_driver {
 public:
  std::optional<kernel_description> describe_kernel(std::uintptr_t k) override {
    CUdeviceptr ptr = 0x90000;
    const cuMemAlloc_v2_params p{&ptr, 64};
    CUresult ok = CUDA_SUCCESS;
    const auto exit = callback_data(CUPTI_API_EXIT, "cuMemAlloc_v2", &p, &ok);
    fake_cupti::deliver(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, &exit);
    return fake_driver::describe_kernel(k);
  }
};

class CuptiSubscriber : public ::testing::Test {
 protected:
  fake_cupti::state& cupti = fake_cupti::reset();
  recorder rec{{.capture_stacks = false}};
  calling_driver driver;
  capture_sink sink;
  cuda_model model{rec, driver};
  unwinder_call_sites sites{0};
  api_dispatcher dispatcher{model, sites};
  cupti_subscriber subscriber{dispatcher, model, sites};

  void SetUp() override { rec.add_sink(sink); }

  template <class Params, class Result>
  void api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const Params& p,
                Result result) {
    const auto entry = callback_data(CUPTI_API_ENTER, nullptr, &p, nullptr);
    fake_cupti::deliver(domain, cbid, &entry);
    const auto exit = callback_data(CUPTI_API_EXIT, nullptr, &p, &result);
    fake_cupti::deliver(domain, cbid, &exit);
  }
  void launch(CUfunction f) {
    cuLaunchKernel_params p{};
    p.f = f;
    api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, p, CUDA_SUCCESS);
  }
  bool switched(std::uint32_t enable, CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    return std::ranges::count(cupti.callbacks, std::tuple{enable, domain, cbid}) > 0;
  }
};

TEST_F(CuptiSubscriber, EnablesOnceWhenNvtxAndCuInitRace) {
  // The first NVTX call (try_enable) and cuInit (enable) on other threads.
  cupti.subscribe_delay = std::chrono::milliseconds(20);
  constexpr int threads = 8;
  std::latch start(threads);
  std::atomic<int> failures = 0, enabled_on_return = 0;
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      start.arrive_and_wait();
      if (i % 2 == 0) {
        subscriber.try_enable();
        return;
      }
      try {
        subscriber.enable();
        if (dispatcher.active()) ++enabled_on_return;
      } catch (const std::exception&) {
        ++failures;
      }
    });
  }
  for (auto& t : pool) t.join();
  EXPECT_EQ(cupti.subscribe_calls, 1);
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(enabled_on_return, threads / 2);  // enable() returns once it is done
  EXPECT_TRUE(dispatcher.active());
}

TEST_F(CuptiSubscriber, RetriesAfterAFailedAttemptWithTheSameSubscription) {
  cupti.failing_domain_enables = 1;
  try {
    subscriber.enable();
    FAIL() << "enable() succeeded although CUPTI refused";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "enabling runtime callbacks: not initialized");
  }
  EXPECT_FALSE(dispatcher.active());
  EXPECT_TRUE(subscriber.try_enable());  // a second attempt succeeds
  EXPECT_TRUE(dispatcher.active());
  EXPECT_EQ(cupti.subscribe_calls, 1);
}

TEST_F(CuptiSubscriber, EnablingAfterStopDoesNotRestart) {
  subscriber.enable();
  dispatcher.stop();  // process exit
  subscriber.enable();
  EXPECT_TRUE(subscriber.try_enable());
  EXPECT_FALSE(dispatcher.active());
  EXPECT_EQ(cupti.subscribe_calls, 1);
}

TEST_F(CuptiSubscriber, SwitchesOffInertCallbacksAndThoseADriverCallModels) {
  subscriber.enable();
  EXPECT_TRUE(switched(0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
  EXPECT_TRUE(switched(0, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent));
  // Note [Runtime launch callbacks on request]: off unless asked for.
  EXPECT_TRUE(
      switched(0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  EXPECT_FALSE(
      switched(0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000));
  EXPECT_FALSE(switched(0, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocArray_v3020));
  EXPECT_FALSE(switched(0, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize));
  EXPECT_TRUE(switched(1, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING));
  EXPECT_TRUE(switched(1, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING));
}

TEST_F(CuptiSubscriber, RuntimeCallbacksReachTheModel) {
  subscriber.enable();
  void* ptr = reinterpret_cast<void*>(0x10000);
  api_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
           cudaMalloc_v3020_params{&ptr, 256}, cudaSuccess);
  const auto allocs = sink.all<alloc_record>();
  ASSERT_EQ(allocs.size(), 1u);
  EXPECT_EQ(allocs[0].size, 256u);
  EXPECT_EQ(dispatcher.api_calls(), 1u);
  EXPECT_EQ(subscriber.callbacks_received().runtime, 2u);
}

TEST_F(CuptiSubscriber, NothingArrivesBeforeEnable) {
  void* ptr = reinterpret_cast<void*>(0x10000);
  const cudaMalloc_v3020_params p{&ptr, 256};
  cudaError_t ok = cudaSuccess;
  const auto exit = callback_data(CUPTI_API_EXIT, nullptr, &p, &ok);
  subscriber.on_callback(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                         &exit);
  EXPECT_TRUE(sink.records.empty());
}

// Note [Nesting is tracked while stopped]: a runtime call whose exit
// callback came while the callbacks were paused leaves its thread recording.
TEST_F(CuptiSubscriber, ACallThatReturnsWhilePausedDoesNotSilenceItsThread) {
  subscriber.enable();
  const cudaStreamSynchronize_v3020_params sync{nullptr};
  const auto entry = callback_data(CUPTI_API_ENTER, nullptr, &sync, nullptr);
  fake_cupti::deliver(CUPTI_CB_DOMAIN_RUNTIME_API,
                      CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &entry);
  dispatcher.stop();
  cudaError_t ok = cudaSuccess;
  const auto exit = callback_data(CUPTI_API_EXIT, nullptr, &sync, &ok);
  fake_cupti::deliver(CUPTI_CB_DOMAIN_RUNTIME_API,
                      CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &exit);
  dispatcher.resume();
  void* ptr = reinterpret_cast<void*>(0x10000);
  api_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
           cudaMalloc_v3020_params{&ptr, 256}, cudaSuccess);
  EXPECT_EQ(sink.all<alloc_record>().size(), 1u);
}

TEST_F(CuptiSubscriber, ItsOwnDriverCallsAreNotThePrograms) {
  subscriber.enable();
  driver.kernels[0xabc] = kernel_description{"_Z1kv", {}, true};
  launch(reinterpret_cast<CUfunction>(0xabc));  // asks the driver about the kernel
  EXPECT_EQ(sink.all<kernel_launch>().size(), 1u);
  EXPECT_TRUE(sink.all<alloc_record>().empty());
  EXPECT_EQ(subscriber.callbacks_received().driver, 2u);
}

TEST_F(CuptiSubscriber, NvtxRangesAndMarks) {
  subscriber.enable();
  const nvtxRangePushA_params push{"phase 1"};
  const CUpti_NvtxData push_data{"nvtxRangePushA", &push, nullptr};
  fake_cupti::deliver(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePushA, &push_data);
  const CUpti_NvtxData pop_data{"nvtxRangePop", nullptr, nullptr};
  fake_cupti::deliver(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePop, &pop_data);
  const nvtxRangeStartA_params start{"overlapping"};
  const CUpti_NvtxData start_data{"nvtxRangeStartA", &start, nullptr};
  fake_cupti::deliver(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangeStartA, &start_data);
  EXPECT_EQ(sink.tables.string(sink.all<nvtx_push>().at(0).message), "phase 1");
  EXPECT_EQ(sink.all<nvtx_pop>().size(), 1u);
  EXPECT_EQ(sink.tables.string(sink.all<unmodelled_call>().at(0).api), "nvtxRangeStartA");
}

TEST_F(CuptiSubscriber, ModuleUnloadRetiresKernelHandles) {
  subscriber.enable();
  driver.kernels[0xabc] = kernel_description{"_Z1kv", {}, true};
  launch(reinterpret_cast<CUfunction>(0xabc));
  launch(reinterpret_cast<CUfunction>(0xabc));
  EXPECT_EQ(driver.kernel_queries.load(), 1);
  const CUpti_ResourceData unload{};
  fake_cupti::deliver(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, &unload);
  launch(reinterpret_cast<CUfunction>(0xabc));
  EXPECT_EQ(driver.kernel_queries.load(), 2);
}

}  // namespace
}  // namespace streamsan::injection
