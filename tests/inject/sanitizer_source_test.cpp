// The Compute Sanitizer API source over a fake Sanitizer API library and a
// fake driver: which launches it measures, how a measured footprint reaches
// the log in its place, and what it does for capturing streams, graph nodes
// and modules it cannot patch (Note [Which launches are measured]).
#include "inject/sanitizer_api/sanitizer_source.h"

#include <gtest/gtest.h>
#include <sanitizer.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <variant>

#include "inject/precise/footprint_record.h"
#include "inject/precise/footprint_resolver.h"
#include "tests/inject/capture_sink.h"
#include "tests/inject/fake_cuda_driver.h"
#include "tests/inject/fake_driver.h"
#include "tests/inject/fake_sanitizer_api.h"

namespace streamsan::injection {
namespace {

namespace sp = streamsan::precise;

const auto ctx = reinterpret_cast<CUcontext>(0xc0);
const auto module_a = reinterpret_cast<CUmodule>(0xa000);
const auto fill = reinterpret_cast<CUfunction>(0xf111);
const auto stream_1 = reinterpret_cast<CUstream>(0x5001);
const auto stream_2 = reinterpret_cast<CUstream>(0x5002);
constexpr std::uint64_t buffer = 0x7e0000000000;

// cuStreamDestroy_v2's parameters, likewise.
struct stream_destroy_params {
  CUstream hStream;
};

// cuLaunchKernel's parameters as generated_cuda_meta.h lays them out (that
// header cannot meet sanitizer.h in one translation unit).
struct launch_params {
  CUfunction f;
  unsigned int grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes;
  CUstream hStream;
  void** kernelParams;
  void** extra;
};

class no_call_sites final : public call_site_source {
 public:
  call_site capture(std::uint64_t) noexcept override { return {}; }
};

class SanitizerSource : public ::testing::Test {
 protected:
  recorder rec{{.capture_stacks = false, .stack_depth = 0}};
  fake_driver driver;
  capture_sink sink;
  sp::footprint_resolver resolver;
  cuda_model model{rec, driver};
  no_call_sites sites;
  api_dispatcher dispatcher{model, sites};
  std::unique_ptr<sanitizer_source> source;
  std::uintptr_t next_launch = 0x100;

  void start(measurement_policy policy, bool refuse_module = false) {
    fake_sanitizer_reset();
    if (refuse_module) fake_sanitizer_refuse_module(module_a);
    fake_cuda_hold_events(false);
    resolver.add_downstream(sink);
    rec.add_sink(resolver);
    model.set_footprint_resolver(&resolver);
    driver.kernels[reinterpret_cast<std::uintptr_t>(fill)] =
        kernel_description{"_Z4fillPfi", {{0, 8}, {8, 4}}, true};
    fake_cuda_define_function(fill, module_a, "_Z4fillPfi");
    model.allocated({}, buffer, 1 << 20, memory_kind::device);
    std::string why;
    source = sanitizer_source::create(dispatcher, model, policy, why);
    ASSERT_NE(source, nullptr) << why;
    source->enable();
    Sanitizer_ResourceModuleData m{};
    m.context = ctx;
    m.module = module_a;
    fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_RESOURCE, SANITIZER_CBID_RESOURCE_MODULE_LOADED, &m);
  }

  void api(Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const char* name,
           const void* params) {
    Sanitizer_CallbackData d{};
    d.callbackSite = SANITIZER_API_ENTER;
    d.functionName = name;
    d.functionParams = params;
    d.context = ctx;
    fake_sanitizer_deliver(domain, cbid, &d);
    const CUresult ok = CUDA_SUCCESS;
    d.callbackSite = SANITIZER_API_EXIT;
    d.functionReturnValue = &ok;
    fake_sanitizer_deliver(domain, cbid, &d);
  }

  // The entry and the exit of one cuLaunchKernel of fill(buffer + offset,
  // n), apart, so that a test can put other calls between them.
  struct launch_call {
    std::uint64_t out = 0;
    int n = 0;
    void* args[2] = {};
    launch_params p{};
    Sanitizer_CallbackData d{};
    Sanitizer_LaunchData l{};
  };
  void launch_enter(launch_call& c, CUstream stream, std::uint64_t offset, std::uint64_t bytes) {
    c.out = buffer + offset;
    c.n = static_cast<int>(bytes / 4);
    c.args[0] = &c.out;
    c.args[1] = &c.n;
    c.p.f = fill;
    c.p.hStream = stream;
    c.p.kernelParams = c.args;
    c.d.callbackSite = SANITIZER_API_ENTER;
    c.d.functionName = "cuLaunchKernel";
    c.d.functionParams = &c.p;
    c.d.context = ctx;
    fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuLaunchKernel, &c.d);
  }
  // The launch callbacks and the call's exit; the "kernel" writes its bytes
  // through the table it was given, if any. Returns whether it got one.
  bool launch_exit(launch_call& c, std::uint64_t bytes) {
    c.l.context = ctx;
    c.l.stream = c.p.hStream;
    c.l.hStream = reinterpret_cast<Sanitizer_StreamHandle>(c.p.hStream);
    c.l.module = module_a;
    c.l.function = fill;
    c.l.functionName = "_Z4fillPfi";
    c.l.hLaunch = reinterpret_cast<Sanitizer_LaunchHandle>(next_launch++);
    fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_LAUNCH, SANITIZER_CBID_LAUNCH_BEGIN, &c.l);
    auto* table = static_cast<const sp::table_view*>(fake_sanitizer_userdata(c.l.hLaunch));
    if (table != nullptr) sp::record_span(*table, c.out, bytes, sp::footprint_kind::write);
    fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_LAUNCH, SANITIZER_CBID_LAUNCH_END, &c.l);
    const CUresult ok = CUDA_SUCCESS;
    c.d.callbackSite = SANITIZER_API_EXIT;
    c.d.functionReturnValue = &ok;
    fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuLaunchKernel, &c.d);
    return table != nullptr;
  }
  // A launch of fill(buffer + offset, n) on `stream`. Returns whether the
  // launch was given a table.
  bool launch(CUstream stream, std::uint64_t offset, std::uint64_t bytes) {
    launch_call c;
    launch_enter(c, stream, offset, bytes);
    return launch_exit(c, bytes);
  }

  void synchronize() {
    api(SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuCtxSynchronize,
        "cuCtxSynchronize", nullptr);
  }

  std::vector<std::vector<access>> launches() const {
    std::vector<std::vector<access>> out;
    for (const auto& c : sink.records) {
      if (std::holds_alternative<kernel_launch>(c.body)) out.push_back(c.accesses);
    }
    return out;
  }
};

TEST_F(SanitizerSource, MeasuresAKernelsFirstLaunchOnEachStreamOnly) {
  start(measurement_policy::on_demand);
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  EXPECT_TRUE(launch(stream_1, 0, 400));
  EXPECT_FALSE(launch(stream_1, 4096, 400));  // known on this stream
  EXPECT_TRUE(launch(stream_2, 8192, 400));   // first on stream 2
  source->drain();
  const auto l = launches();
  ASSERT_EQ(l.size(), 3u);
  ASSERT_EQ(l[0].size(), 1u);
  EXPECT_EQ(l[0][0].origin, access_origin::measured);
  EXPECT_EQ(l[0][0].range.size, 400u);
  EXPECT_EQ(l[0][0].mode, access_mode::write);
  ASSERT_EQ(l[1].size(), 1u);
  EXPECT_EQ(l[1][0].origin, access_origin::inferred);
  EXPECT_EQ(l[1][0].mode, access_mode::write);  // learned from the first launch
  EXPECT_EQ(l[2][0].origin, access_origin::measured);
}

TEST_F(SanitizerSource, PreciseMeasuresEveryLaunch) {
  start(measurement_policy::every_launch);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(launch(stream_1, 4096 * i, 64));
  source->drain();
  for (const auto& l : launches()) EXPECT_EQ(l.at(0).origin, access_origin::measured);
}

TEST_F(SanitizerSource, TheLogWaitsForTheKernelThenKeepsItsOrder) {
  start(measurement_policy::every_launch);
  fake_cuda_hold_events(true);
  launch(stream_1, 0, 64);
  synchronize();
  EXPECT_TRUE(launches().empty());  // held behind the launch
  EXPECT_TRUE(sink.all<device_synchronize>().empty());
  fake_cuda_complete_events();
  synchronize();  // the next call's entry reads it back
  ASSERT_EQ(launches().size(), 1u);
  EXPECT_EQ(launches()[0][0].origin, access_origin::measured);
  EXPECT_EQ(sink.all<device_synchronize>().size(), 2u);
}

TEST_F(SanitizerSource, LaunchesIntoACapturingStreamAreNotMeasured) {
  start(measurement_policy::every_launch);
  fake_cuda_set_capturing(stream_2, true);
  EXPECT_FALSE(launch(stream_2, 0, 64));
  fake_cuda_set_capturing(stream_2, false);
  EXPECT_TRUE(launch(stream_2, 0, 64));
}

TEST_F(SanitizerSource, UnwantedModulesAreUnpatchedAndLaunchCallbacksFollow) {
  start(measurement_policy::on_demand);
  EXPECT_TRUE(fake_sanitizer_domain_enabled(SANITIZER_CB_DOMAIN_LAUNCH));
  launch(stream_1, 0, 64);
  source->drain();
  launch(stream_1, 0, 64);  // nothing wanted of the module any more
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
  EXPECT_FALSE(fake_sanitizer_domain_enabled(SANITIZER_CB_DOMAIN_LAUNCH));
}

// Note [A module changes only while none of its kernels runs]: on an H100,
// unpatching a module while a kernel of it ran on another stream made that
// kernel fail with an illegal instruction.
TEST_F(SanitizerSource, AModuleIsNotUnpatchedWhileItsKernelsMayRun) {
  start(measurement_policy::on_demand);
  launch(stream_1, 0, 64);
  source->drain();
  fake_cuda_set_stream_busy(stream_1, true);  // its launch still runs
  launch(stream_1, 0, 64);                    // nothing wanted: unpatch, but not now
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  fake_cuda_set_stream_busy(stream_1, false);
  launch(stream_1, 0, 64);
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
}

TEST_F(SanitizerSource, AModuleIsNotPatchedWhileItsKernelsMayRunAndTheLaunchStaysInferred) {
  start(measurement_policy::on_demand);
  launch(stream_1, 0, 64);
  source->drain();
  launch(stream_1, 0, 64);  // unpatched now
  ASSERT_FALSE(fake_sanitizer_is_patched(module_a));
  fake_cuda_set_stream_busy(stream_1, true);
  EXPECT_FALSE(launch(stream_2, 4096, 64));  // wanted (first on stream 2), not measurable now
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
  fake_cuda_set_stream_busy(stream_1, false);
  EXPECT_TRUE(launch(stream_2, 8192, 64));  // still wanted: measured once it is safe
  source->drain();
  const auto l = launches();
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[2].at(0).origin, access_origin::inferred);
  EXPECT_EQ(l[3].at(0).origin, access_origin::measured);
}

// A context synchronize ends every kernel launched before it began.
TEST_F(SanitizerSource, AContextSynchronizeShowsEveryStreamIdle) {
  start(measurement_policy::on_demand);
  launch(stream_1, 0, 64);
  source->drain();
  fake_cuda_set_stream_busy(stream_1, true);
  const stream_destroy_params destroy{stream_1};
  api(SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuStreamDestroy_v2,
      "cuStreamDestroy_v2", &destroy);  // destroyed busy: no query can see it end
  fake_cuda_set_stream_busy(stream_1, false);
  launch(stream_2, 0, 64);
  source->drain();
  launch(stream_2, 0, 64);
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));  // the destroyed stream's work may run
  synchronize();
  launch(stream_2, 0, 64);
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
}

// Note [Stamped at the launch call's exit]: a synchronize that another
// thread began while a launch call was still enqueueing its kernel does not
// wait for that kernel, so it must not make the kernel's stream forgotten.
TEST_F(SanitizerSource, ASynchronizeDuringALaunchCallDoesNotForgetItsKernel) {
  start(measurement_policy::on_demand);
  launch(stream_1, 0, 64);
  launch(stream_2, 4096, 64);
  source->drain();
  fake_cuda_set_stream_busy(stream_1, true);  // keeps the module patched for now
  std::mutex m;
  std::condition_variable cv;
  int step = 0;
  std::thread launcher([&] {
    launch_call c;
    launch_enter(c, stream_2, 4096, 64);  // measured before: unpatch, but stream 1 runs
    std::unique_lock lock(m);
    step = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return step == 2; });
    fake_cuda_set_stream_busy(stream_2, true);  // the kernel is enqueued and runs
    lock.unlock();
    launch_exit(c, 64);
  });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return step == 1; });
  }
  synchronize();  // began before the kernel was enqueued
  {
    std::lock_guard lock(m);
    step = 2;
  }
  cv.notify_all();
  launcher.join();
  fake_cuda_set_stream_busy(stream_1, false);
  launch(stream_1, 0, 64);  // nothing wanted: unpatch, but stream 2's kernel may run
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  fake_cuda_set_stream_busy(stream_2, false);
  launch(stream_1, 0, 64);
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
}

// While another thread is inside cuStreamDestroy, no module changes: the
// change would ask streams the driver may be freeing (on an H100,
// cuStreamQuery on a freed handle crashed inside the driver).
TEST_F(SanitizerSource, NoModuleChangesWhileAStreamIsBeingDestroyed) {
  start(measurement_policy::on_demand);
  launch(stream_1, 0, 64);
  source->drain();
  std::mutex m;
  std::condition_variable cv;
  int step = 0;
  std::thread destroyer([&] {
    const stream_destroy_params destroy{stream_2};
    Sanitizer_CallbackData d{};
    d.callbackSite = SANITIZER_API_ENTER;
    d.functionName = "cuStreamDestroy_v2";
    d.functionParams = &destroy;
    d.context = ctx;
    fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_DRIVER_API,
                           SANITIZER_CBID_DRIVER_API_cuStreamDestroy_v2, &d);
    std::unique_lock lock(m);
    step = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return step == 2; });
    const CUresult ok = CUDA_SUCCESS;
    d.callbackSite = SANITIZER_API_EXIT;
    d.functionReturnValue = &ok;
    fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_DRIVER_API,
                           SANITIZER_CBID_DRIVER_API_cuStreamDestroy_v2, &d);
  });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return step == 1; });
  }
  launch(stream_1, 0, 64);  // nothing wanted: unpatch, but not during the destroy
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  {
    std::lock_guard lock(m);
    step = 2;
  }
  cv.notify_all();
  destroyer.join();
  launch(stream_1, 0, 64);
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
}

TEST_F(SanitizerSource, KernelsNamedByACandidateAreMeasuredAgain) {
  start(measurement_policy::on_demand);
  launch(stream_1, 0, 64);
  source->drain();
  EXPECT_FALSE(launch(stream_1, 0, 64));
  source->measure_kernel("fill(float*, int)", 2);  // the model's name, as candidates give it
  EXPECT_TRUE(launch(stream_1, 0, 64));
  EXPECT_TRUE(launch(stream_1, 0, 64));
  EXPECT_FALSE(launch(stream_1, 0, 64));
}

TEST_F(SanitizerSource, AGraphNodeOfAPatchedModuleGetsNoTable) {
  start(measurement_policy::every_launch);
  Sanitizer_GraphNodeLaunchData n{};
  n.nodeType = CU_GRAPH_NODE_TYPE_KERNEL;
  n.launchData.module = module_a;
  n.launchData.function = fill;
  n.launchData.hLaunch = reinterpret_cast<Sanitizer_LaunchHandle>(0x999);
  fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_GRAPHS, SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN, &n);
  EXPECT_TRUE(fake_sanitizer_userdata_set(n.launchData.hLaunch));
  EXPECT_EQ(fake_sanitizer_userdata(n.launchData.hLaunch), nullptr);
}

TEST_F(SanitizerSource, AModuleThatCannotBePatchedIsNamedWithItsKernels) {
  start(measurement_policy::every_launch, true);
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
  EXPECT_FALSE(launch(stream_1, 0, 64));
  const auto failures = source->patch_failures();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_NE(failures[0].find("kernels fill(float*, int)"), std::string::npos) << failures[0];
  EXPECT_NE(failures[0].find("INVALID_PARAMETER"), std::string::npos) << failures[0];
  source->drain();
  EXPECT_EQ(launches().at(0).at(0).origin, access_origin::inferred);
}

}  // namespace
}  // namespace streamsan::injection

namespace streamsan::injection {
namespace {

void load_module_b(void*) {
  Sanitizer_ResourceModuleData m{};
  m.context = ctx;
  m.module = reinterpret_cast<CUmodule>(0xb000);
  fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_RESOURCE, SANITIZER_CBID_RESOURCE_MODULE_LOADED, &m);
}

// The driver loads modules lazily: the first lookup of a kernel's function
// may load (and so patch) a module from inside our launch-entry callback.
// That once deadlocked on the H100 (Note [No lock across driver calls]).
// A read-back is a synchronous copy and a table an allocation: either one
// invalidates a global-mode capture anywhere in the process, so nothing is
// measured or polled until it ends (Note [Nothing of ours while a stream
// captures]).
TEST_F(SanitizerSource, WhileAStreamCapturesNothingIsMeasuredOrReadBack) {
  start(measurement_policy::every_launch);
  fake_cuda_hold_events(true);
  EXPECT_TRUE(launch(stream_1, 0, 64));
  const auto capturing = stream_arg{reinterpret_cast<std::uintptr_t>(stream_2)};
  model.capture_began({}, capturing);
  fake_cuda_complete_events();
  EXPECT_FALSE(launch(stream_1, 64, 64));  // another stream: still not measured
  EXPECT_TRUE(launches().empty());          // the first one's read-back waits
  model.capture_ended({}, capturing, 0);
  EXPECT_TRUE(launch(stream_1, 128, 64));
  synchronize();
  source->drain();
  ASSERT_EQ(launches().size(), 3u);
  EXPECT_EQ(launches()[0].at(0).origin, access_origin::measured);
  EXPECT_EQ(launches()[1].at(0).origin, access_origin::inferred);
  EXPECT_EQ(launches()[2].at(0).origin, access_origin::measured);
}

TEST_F(SanitizerSource, AModuleLoadedDuringAKernelLookupIsPatchedWithoutDeadlock) {
  start(measurement_policy::on_demand);
  fake_cuda_on_next_kernel_lookup(load_module_b, nullptr);
  EXPECT_TRUE(launch(stream_1, 0, 64));
  synchronize();
  EXPECT_EQ(launches().size(), 1u);
}

}  // namespace
}  // namespace streamsan::injection
