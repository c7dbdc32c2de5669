// The Compute Sanitizer API source over a fake Sanitizer API library and a
// fake driver: which launches it measures, how a measured footprint reaches
// the log in its place, and what it does for capturing streams, graph nodes
// and modules it cannot patch (Note [Which launches are measured]).
#include "inject/sanitizer_api/sanitizer_source.h"

#include <gtest/gtest.h>
#include <sanitizer.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>

#include "inject/precise/footprint_record.h"
#include "inject/precise/footprint_resolver.h"
#include "sanitizer/engine/engine.h"
#include "tests/inject/capture_sink.h"
#include "tests/inject/driver_call_params.h"
#include "tests/inject/fake_cuda_driver.h"
#include "tests/inject/fake_driver.h"
#include "tests/inject/fake_sanitizer_api.h"
#include "tests/inject/fake_sanitizer_calls.h"
#include "tests/inject/sanitizer_test_handles.h"

namespace streamsan::injection {
namespace {

namespace sp = streamsan::precise;

using namespace sanitizer_test_handles;  // tests/inject/sanitizer_test_handles.h

using namespace driver_calls;  // tests/inject/driver_call_params.h

// A resource callback of `module` in ctx: loaded, or about to unload.
void deliver_module(Sanitizer_CallbackId cbid, CUmodule module) {
  Sanitizer_ResourceModuleData m{};
  m.context = ctx;
  m.module = module;
  fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_RESOURCE, cbid, &m);
}

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
  std::atomic<std::uintptr_t> next_launch{0x100};  // launches come from several threads
  graph_node_measurement graph_nodes = graph_node_measurement::off;
  bool decode_thread = false;  // Note [Decoded on a thread of its own]
  // Whether the program's work can overlap from the start: a non-blocking
  // stream exists (Note [First launches are measured once work can
  // overlap]). Most tests are about measuring, so it can.
  bool work_overlaps = true;
  static constexpr std::uintptr_t side_stream = 0x5fff;
  static constexpr unsigned non_blocking = 0x1;  // cudaStreamNonBlocking

  void start(measurement_policy policy, bool refuse_module = false, bool count_callbacks = false) {
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
    if (work_overlaps) model.stream_created({}, side_stream, non_blocking, 0);
    std::string why;
    source = sanitizer_source::create(dispatcher, model, policy, why, graph_nodes);
    // Thrown, not asserted: an ASSERT here returns from this helper only, and
    // the test went on to dereference the missing source (run outside meson
    // test, without STREAMSAN_SANITIZER_LIB: a SEGV in place of the cause).
    if (source == nullptr) throw std::runtime_error("sanitizer_source::create failed: " + why);
    source->set_decode_thread(decode_thread);
    if (count_callbacks) source->count_api_callbacks();
    source->enable();
    deliver_module(SANITIZER_CBID_RESOURCE_MODULE_LOADED, module_a);
  }

  // The entry and the exit of one API call; `inside` runs between them, as
  // the driver's own work would (a module load's callbacks, a wait).
  void api(Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const char* name,
           const void* params, const std::function<void()>& inside = {}) {
    fake_calls::deliver_api_call(domain, cbid, name, params, ctx, [&] {
      if (inside) inside();
    });
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
    c.l = fake_calls::launch_data(ctx, c.p.hStream, module_a, fill, "_Z4fillPfi", next_launch++);
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
  void synchronize_stream(CUstream stream) {
    const stream_params sync{stream};
    api(SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuStreamSynchronize,
        "cuStreamSynchronize", &sync);
  }

  // The default mode's first launch on stream 1, measured, and the next,
  // which unpatches the module again: stream 1 is then known.
  void measure_first_then_unpatch() {
    start(measurement_policy::on_demand);
    launch(stream_1, 0, 64);
    source->drain();
    launch(stream_1, 0, 64);  // unpatched now
    ASSERT_FALSE(fake_sanitizer_is_patched(module_a));
  }

  // Note [Waiting for a module's streams to drain]: stream 1's first launch
  // measured, its next unpatching the module through the wait (the measured
  // kernel still runs), then a first launch on stream 2, measured: the
  // module patched again.
  void unpatch_through_the_wait_then_patch_again(std::chrono::milliseconds wait) {
    start(measurement_policy::on_demand);
    source->set_unpatch_wait(wait);
    launch(stream_1, 0, 64);
    source->drain();
    fake_cuda_set_stream_busy_for(stream_1, 3);
    launch(stream_1, 0, 64);  // the wait: drained, unpatched
    ASSERT_FALSE(fake_sanitizer_is_patched(module_a));
    model.stream_created({}, reinterpret_cast<std::uintptr_t>(stream_2), 0, 0);
    EXPECT_TRUE(launch(stream_2, 0, 64));  // first on stream 2: patched again
    source->drain();
  }

  // Note [A driver lock in the fake]: loads and unloads on two threads,
  // launches on new streams on two others (the test of that name).
  // With `unpatch_wait`, each unpatch after a patch waits for its streams
  // (Note [Waiting for a module's streams to drain], the default mode's).
  void load_and_launch_on_threads(measurement_policy policy,
                                  std::chrono::milliseconds unpatch_wait = {});

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

// Note [Launches paused for a benchmark]
TEST_F(SanitizerSource, PausedLaunchesPassUnrecordedAndOtherCallsAreModelled) {
  measure_first_then_unpatch();
  const std::size_t before = launches().size();
  const std::size_t records_before = sink.records.size();
  source->pause_launches(true);
  EXPECT_FALSE(launch(stream_1, 0, 64));
  EXPECT_FALSE(launch(stream_1, 0, 64));
  EXPECT_EQ(launches().size(), before);
  synchronize();  // still modelled
  EXPECT_GT(sink.records.size(), records_before);
  source->pause_launches(false);
  launch(stream_1, 0, 64);
  EXPECT_EQ(launches().size(), before + 1);
}

// <<<>>> through the static CUDA 13 runtime reaches the callbacks as the
// runtime's cudaLaunchKernel around the driver's launch: paused, both pass.
TEST_F(SanitizerSource, APausedRuntimeLaunchPassesWithTheDriverLaunchInIt) {
  dispatcher.set_runtime_launch_callbacks(true);  // STREAMSAN_RUNTIME_LAUNCH_CALLBACKS=on
  measure_first_then_unpatch();
  const std::size_t records_before = sink.records.size();
  source->pause_launches(true);
  driver_calls::runtime_launch_params p{reinterpret_cast<const void*>(fill), 1, 1, 1, 64, 1, 1,
                                        nullptr, 0, stream_1};
  api(SANITIZER_CB_DOMAIN_RUNTIME_API, SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel,
      "cudaLaunchKernel", &p, [&] { launch(stream_1, 0, 64); });
  EXPECT_EQ(sink.records.size(), records_before);  // no launch, no unmodelled call
  source->pause_launches(false);
  api(SANITIZER_CB_DOMAIN_RUNTIME_API, SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel,
      "cudaLaunchKernel", &p, [&] { launch(stream_1, 0, 64); });
  EXPECT_EQ(launches().size(), 3u);  // the two before the pause and this one
}

// A launch passes whole or not at all: what its entry decided holds at its
// exit, whichever way the pause changed between them.
TEST_F(SanitizerSource, APauseBetweenALaunchsEntryAndExitKeepsWhatTheEntryDecided) {
  measure_first_then_unpatch();
  const std::size_t before = launches().size();
  launch_call paused;
  source->pause_launches(true);
  launch_enter(paused, stream_1, 0, 64);
  source->pause_launches(false);
  launch_exit(paused, 64);
  EXPECT_EQ(launches().size(), before);
  launch_call modelled;
  launch_enter(modelled, stream_1, 0, 64);
  source->pause_launches(true);
  launch_exit(modelled, 64);
  EXPECT_EQ(launches().size(), before + 1);
  source->pause_launches(false);
  launch(stream_1, 0, 64);
  EXPECT_EQ(launches().size(), before + 2);
}

// Note [A callback counter only when asked]
TEST_F(SanitizerSource, CountsApiCallbacksOnlyWhenAsked) {
  start(measurement_policy::on_demand);
  launch(stream_1, 0, 64);
  synchronize();
  EXPECT_EQ(source->stats().api_callbacks, 0u);
}

TEST_F(SanitizerSource, CountsEveryApiCallbackWhenAsked) {
  start(measurement_policy::on_demand, false, true);
  launch(stream_1, 0, 64);  // entry and exit
  synchronize();            // entry and exit
  EXPECT_EQ(source->stats().api_callbacks, 4u);
  EXPECT_EQ(source->stats().nested_api_callbacks, 0u);
}

// A driver call made inside one of the source's callbacks (here the
// unpatch of a module at a launch's entry) reaches the subscriber too: ignored,
// and counted apart.
TEST_F(SanitizerSource, CountsCallbacksNestedInItsOwnApart) {
  start(measurement_policy::on_demand, false, true);
  fake_sanitizer_on_module_change(+[] {
    Sanitizer_CallbackData d{};
    d.callbackSite = SANITIZER_API_ENTER;
    d.functionName = "cuStreamQuery";
    fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuStreamQuery,
                           &d);
  });
  EXPECT_TRUE(launch(stream_1, 0, 64));   // measured
  EXPECT_FALSE(launch(stream_1, 0, 64));  // not: its module is unpatched
  EXPECT_EQ(source->stats().api_callbacks, 4u);
  EXPECT_EQ(source->stats().nested_api_callbacks, 1u);
}

// Note [First launches are measured once work can overlap]
TEST_F(SanitizerSource, FirstLaunchesWaitUntilWorkCanOverlap) {
  work_overlaps = false;
  // launches_before_overlap is counted only when asked.
  start(measurement_policy::on_demand, false, /*count_callbacks=*/true);
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));  // not at its load
  EXPECT_FALSE(launch(stream_1, 0, 400));             // one blocking stream: one order
  EXPECT_FALSE(launch(stream_1, 4096, 400));          // asked again: still no
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
  EXPECT_FALSE(fake_sanitizer_domain_enabled(SANITIZER_CB_DOMAIN_LAUNCH));
  EXPECT_EQ(source->stats().launches_before_overlap, 2u);
  model.stream_created({}, side_stream, non_blocking, 0);
  EXPECT_TRUE(launch(stream_1, 8192, 400));  // its first measurement on stream 1
  EXPECT_FALSE(launch(stream_1, 8192, 400));
  EXPECT_EQ(source->stats().launches_before_overlap, 2u);
  source->drain();
  const auto l = launches();
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0].at(0).origin, access_origin::inferred);
  EXPECT_EQ(l[1].at(0).origin, access_origin::inferred);
  EXPECT_EQ(l[2].at(0).origin, access_origin::measured);
  EXPECT_EQ(l[3].at(0).origin, access_origin::inferred);
}

TEST_F(SanitizerSource, ASecondBlockingStreamLetsWorkOverlap) {
  work_overlaps = false;
  start(measurement_policy::on_demand);
  EXPECT_FALSE(launch(stream_1, 0, 400));
  model.stream_created({}, reinterpret_cast<std::uintptr_t>(stream_2), 0, 0);
  EXPECT_TRUE(launch(stream_2, 4096, 400));  // neither orders the other
  EXPECT_TRUE(launch(stream_1, 8192, 400));  // not measured on stream 1 before
}

// A stream made where streamsan could not see it (inside a library) is
// first seen at its first launch's entry, and counts for that launch.
TEST_F(SanitizerSource, AStreamFirstSeenAtALaunchCountsForThatLaunch) {
  work_overlaps = false;
  start(measurement_policy::on_demand);
  EXPECT_FALSE(launch(stream_1, 0, 400));
  EXPECT_FALSE(model.work_may_overlap());
  EXPECT_TRUE(launch(stream_2, 4096, 400));
  EXPECT_TRUE(launch(stream_1, 8192, 400));
}

TEST_F(SanitizerSource, AHostAccessLetsWorkOverlap) {
  work_overlaps = false;
  start(measurement_policy::on_demand);
  EXPECT_FALSE(launch(stream_1, 0, 400));
  const annotated_range r{buffer, 16, access_mode::read, access_origin::exact};
  model.host_accessed({}, std::span(&r, 1), "h[0]");
  EXPECT_TRUE(launch(stream_1, 4096, 400));
}

// The host runs beside every stream: a first launch into memory it can
// access is measured even while no two streams can overlap.
TEST_F(SanitizerSource, AFirstLaunchIntoHostMemoryIsMeasuredBeforeWorkCanOverlap) {
  work_overlaps = false;
  start(measurement_policy::on_demand);
  constexpr std::uint64_t pinned = 0x7f0000000000;
  model.allocated({}, pinned, 1 << 20, memory_kind::pinned_host);
  EXPECT_FALSE(launch(stream_1, 0, 400));  // device memory only
  launch_call c;
  launch_enter(c, stream_1, pinned - buffer, 400);
  EXPECT_TRUE(launch_exit(c, 400));
  launch_call again;
  launch_enter(again, stream_1, pinned - buffer, 400);
  EXPECT_FALSE(launch_exit(again, 400));  // measured on stream 1 already
  EXPECT_FALSE(launch(stream_1, 0, 400));
  EXPECT_FALSE(model.work_may_overlap());
}

// Threads that keep launching while another makes the stream that lets
// work overlap: each thread's settled answers (Note [Settled launches])
// give way to the new settling generation, so a first launch on a stream
// not measured before is measured after, whichever thread makes it; and
// ThreadSanitizer (tools/test-all's tsan pass) sees no race in between.
// The patch that measurement needs is put off while the other thread is
// inside a launch call, and retried only after a number of launches that
// doubles each time (Note [Module changes back off]): with 100 launches
// each after the stream was made, the module stayed unpatched in about one
// run in ten (one in sixty under ThreadSanitizer even with 20,000). So
// after their 100, the threads take turns, one launch call at a time,
// until a launch was measured (up to a bound far past the longest
// back-off, 1,023 launches): their own settled answers must still give
// way for it.
TEST_F(SanitizerSource, LaunchesOnThreadsSeeWorkBecomeAbleToOverlap) {
  work_overlaps = false;
  start(measurement_policy::on_demand);
  std::atomic<int> launched{0};
  std::atomic<bool> made{false};
  std::atomic<bool> measured_one{false};
  std::mutex turns;
  const auto launcher = [&] {
    int after = 0;
    while (after < 100 || (!measured_one.load() && after < 20000)) {
      const bool made_before = made.load();
      std::unique_lock one_at_a_time(turns, std::defer_lock);
      if (after >= 100) one_at_a_time.lock();
      if (launch(stream_1, 0, 64)) measured_one = true;
      ++launched;
      if (made_before) ++after;
    }
  };
  std::thread maker([&] {
    while (launched.load() < 100) std::this_thread::yield();
    model.stream_created({}, side_stream, non_blocking, 0);
    made = true;
  });
  std::thread a(launcher), b(launcher);
  maker.join();
  a.join();
  b.join();
  source->drain();
  EXPECT_TRUE(model.work_may_overlap());
  // Stream 1's first measurement came after the stream was made: one, or
  // one per thread when both decided before either launch began.
  EXPECT_GE(source->stats().measured, 1u);
  EXPECT_LE(source->stats().measured, 2u);
  EXPECT_FALSE(launch(stream_1, 0, 64));  // measured on stream 1 by now
}

// Note [A callback counter only when asked]: a launch while work cannot
// overlap is counted only when the counts were asked for.
TEST_F(SanitizerSource, LaunchesBeforeOverlapAreCountedOnlyWhenAsked) {
  work_overlaps = false;
  start(measurement_policy::on_demand);
  EXPECT_FALSE(launch(stream_1, 0, 400));
  EXPECT_FALSE(launch(stream_1, 4096, 400));
  EXPECT_EQ(source->stats().launches_before_overlap, 0u);
  EXPECT_EQ(source->stats().api_callbacks, 0u);
}

TEST_F(SanitizerSource, PreciseMeasuresFirstLaunchesBeforeWorkCanOverlap) {
  work_overlaps = false;
  start(measurement_policy::every_launch, false, /*count_callbacks=*/true);
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  EXPECT_TRUE(launch(stream_1, 0, 400));
  EXPECT_EQ(source->stats().launches_before_overlap, 0u);
}

TEST_F(SanitizerSource, PreciseMeasuresEveryLaunch) {
  start(measurement_policy::every_launch);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(launch(stream_1, 4096 * i, 64));
  source->drain();
  for (const auto& l : launches()) EXPECT_EQ(l.at(0).origin, access_origin::measured);
}

TEST_F(SanitizerSource, MeasuredLaunchesCountTheirSetUpAndReadBackTime) {
  start(measurement_policy::every_launch);
  EXPECT_EQ(source->stats().setup_ns, 0u);
  EXPECT_EQ(source->stats().read_back_ns, 0u);
  launch(stream_1, 0, 64);
  const auto set_up = source->stats().setup_ns;
  EXPECT_GT(set_up, 0u);
  EXPECT_EQ(source->stats().read_back_ns, 0u);  // not read back yet
  source->drain();
  EXPECT_GT(source->stats().read_back_ns, 0u);
  EXPECT_GT(source->stats().copy_ns, 0u);
  EXPECT_LE(source->stats().copy_ns, source->stats().read_back_ns);
  EXPECT_EQ(source->stats().setup_ns, set_up);
}

TEST_F(SanitizerSource, FootprintsDecodedOnTheirOwnThreadKeepLaunchOrder) {
  decode_thread = true;
  start(measurement_policy::every_launch);
  for (std::uint64_t i = 0; i < 12; ++i) EXPECT_TRUE(launch(stream_1, 4096 * i, 64 + 4 * i));
  source->drain();
  const auto l = launches();
  ASSERT_EQ(l.size(), 12u);
  for (std::uint64_t i = 0; i < 12; ++i) {
    ASSERT_EQ(l[i].size(), 1u);
    EXPECT_EQ(l[i][0].origin, access_origin::measured);
    EXPECT_EQ(l[i][0].range.offset, 4096 * i);
    EXPECT_EQ(l[i][0].range.size, 64 + 4 * i);
  }
  EXPECT_GT(source->stats().decode_ns, 0u);
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

// Note [Runtime launch callbacks on request]: what the dispatcher switches
// off, the source does not subscribe to.
TEST_F(SanitizerSource, RuntimeLaunchCallbacksAreSwitchedOffWhenTheDispatcherSaysSo) {
  dispatcher.set_runtime_launch_callbacks(true);
  start(measurement_policy::on_demand);
  EXPECT_FALSE(fake_sanitizer_callback_switched_off(SANITIZER_CB_DOMAIN_RUNTIME_API,
                                                    SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel));
  source.reset();
  dispatcher.set_runtime_launch_callbacks(false);
  start(measurement_policy::on_demand);
  EXPECT_TRUE(fake_sanitizer_callback_switched_off(SANITIZER_CB_DOMAIN_RUNTIME_API,
                                                   SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel));
  EXPECT_FALSE(fake_sanitizer_callback_switched_off(
      SANITIZER_CB_DOMAIN_RUNTIME_API, SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel_ptsz));
  EXPECT_TRUE(launch(stream_1, 0, 64));  // the driver launch alone is measured
}

// Note [Runtime launch callbacks toggled for a benchmark]
TEST_F(SanitizerSource, ABenchmarkTogglesThePlainRuntimeLaunchCallbacks) {
  start(measurement_policy::on_demand);
  const auto plain_off = [] {
    return fake_sanitizer_callback_switched_off(SANITIZER_CB_DOMAIN_RUNTIME_API,
                                                SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel);
  };
  const auto ptsz_off = [] {
    return fake_sanitizer_callback_switched_off(SANITIZER_CB_DOMAIN_RUNTIME_API,
                                                SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel_ptsz);
  };
  EXPECT_TRUE(plain_off());
  source->set_runtime_launch_callbacks(true);
  EXPECT_FALSE(plain_off());
  EXPECT_FALSE(ptsz_off());
  source->set_runtime_launch_callbacks(false);
  EXPECT_TRUE(plain_off());
  EXPECT_FALSE(ptsz_off());
  EXPECT_TRUE(launch(stream_1, 0, 64));  // the driver launch alone is measured
}

// Note [The subscription dropped for a benchmark]
TEST_F(SanitizerSource, ABenchmarkDropsTheSubscriptionAndTakesItAgain) {
  measure_first_then_unpatch();
  const std::size_t seen = launches().size();
  source->set_subscribed(false);
  EXPECT_FALSE(fake_sanitizer_subscribed());
  launch(stream_1, 0, 64);  // unseen
  EXPECT_EQ(launches().size(), seen);
  EXPECT_THROW(source->set_launch_callbacks(false), std::runtime_error);
  source->set_subscribed(false);  // already dropped: nothing to do

  source->set_subscribed(true);
  EXPECT_TRUE(fake_sanitizer_subscribed());
  // What enable() made: both API domains, the plain runtime launch callback
  // off, the launch domain off while nothing is patched.
  EXPECT_TRUE(fake_sanitizer_domain_enabled(SANITIZER_CB_DOMAIN_DRIVER_API));
  EXPECT_TRUE(fake_sanitizer_domain_enabled(SANITIZER_CB_DOMAIN_RUNTIME_API));
  EXPECT_TRUE(fake_sanitizer_callback_switched_off(SANITIZER_CB_DOMAIN_RUNTIME_API,
                                                   SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel));
  EXPECT_FALSE(fake_sanitizer_domain_enabled(SANITIZER_CB_DOMAIN_LAUNCH));
  launch(stream_1, 0, 64);
  EXPECT_EQ(launches().size(), seen + 1);
}

TEST_F(SanitizerSource, TheSubscriptionIsKeptWhileAModuleIsPatched) {
  start(measurement_policy::on_demand);
  EXPECT_TRUE(launch(stream_1, 0, 64));  // measured: its module is patched
  ASSERT_TRUE(fake_sanitizer_is_patched(module_a));
  try {
    source->set_subscribed(false);
    ADD_FAILURE() << "dropped while a module is patched";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the subscription is kept while a module is patched");
  }
  EXPECT_TRUE(fake_sanitizer_subscribed());
  EXPECT_TRUE(fake_sanitizer_domain_enabled(SANITIZER_CB_DOMAIN_LAUNCH));
  source->drain();
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

// Note [A driver lock in the fake]: threads that load and unload modules
// (their callbacks under the fake driver's lock, inside cuModuleLoadData and
// cuModuleUnload as on a GPU) while others launch on ever new streams, so
// that the kernel's module is patched for each new stream's first launch
// and unpatched at the next. It must end (a deadlock ends the test program
// after 60 s), and under ThreadSanitizer (the tsan pass of tools/test-all)
// a lock-order inversion or a data race fails it too.
void SanitizerSource::load_and_launch_on_threads(measurement_policy policy,
                                                 std::chrono::milliseconds unpatch_wait) {
  start(policy);
  source->set_unpatch_wait(unpatch_wait);
  fake_sanitizer_use_driver_lock(true);
  const auto module_call = [this](const char* name, Sanitizer_CallbackId cbid,
                                  const std::function<void()>& inside) {
    api(SANITIZER_CB_DOMAIN_DRIVER_API, cbid, name, nullptr, inside);
  };
  const auto module_event = [](Sanitizer_CallbackId cbid, CUmodule module) {
    Sanitizer_ResourceModuleData m{};
    m.context = ctx;
    m.module = module;
    fake_sanitizer_deliver_under_driver_lock(SANITIZER_CB_DOMAIN_RESOURCE, cbid, &m);
  };
  const auto loader = [&](std::uintptr_t t) {
    for (std::uintptr_t i = 0; i < 200; ++i) {
      const auto m = reinterpret_cast<CUmodule>(0x100000 + t * 0x10000 + i * 0x10);
      module_call("cuModuleLoadData", SANITIZER_CBID_DRIVER_API_cuModuleLoadData,
                  [&] { module_event(SANITIZER_CBID_RESOURCE_MODULE_LOADED, m); });
      module_call("cuModuleUnload", SANITIZER_CBID_DRIVER_API_cuModuleUnload,
                  [&] { module_event(SANITIZER_CBID_RESOURCE_MODULE_UNLOAD_STARTING, m); });
    }
  };
  const auto launcher = [&](std::uintptr_t t) {
    for (std::uintptr_t i = 0; i < 300; ++i) {
      const auto s = reinterpret_cast<CUstream>(0x600000 + t * 0x10000 + i);
      launch(s, 0, 64);  // a new stream: measured, its module patched first
      // Its kernel still runs at the next launch: the wait, if any, polls.
      if (unpatch_wait.count() > 0) fake_cuda_set_stream_busy_for(s, 2);
      launch(s, 0, 64);  // known: the module unpatched again
      if (i % 16 == 0) synchronize_stream(s);
    }
  };
  auto all = std::async(std::launch::async, [&] {
    std::vector<std::thread> threads;
    for (std::uintptr_t t = 0; t < 2; ++t) {
      threads.emplace_back(loader, t);
      threads.emplace_back(launcher, t);
    }
    for (auto& t : threads) t.join();
  });
  if (all.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr, "deadlock: the threads did not end within 60 s\n");
    std::_Exit(1);
  }
  fake_sanitizer_use_driver_lock(false);
  source->drain();
  // Every load patched its module. Note [No module change while a module
  // loads]:
  EXPECT_GT(source->stats().modules_patched, 100u);
  EXPECT_EQ(fake_sanitizer_module_events_during_changes(), 0);
}

TEST_F(SanitizerSource, ModulesLoadAndUnloadWhileOtherThreadsPatchAndUnpatch) {
  load_and_launch_on_threads(measurement_policy::on_demand);
  // The launches tried to unpatch the kernel's module throughout (put off
  // while a load holds the way).
  EXPECT_GT(source->stats().modules_unpatched + source->stats().changes_deferred, 10u);
}

// The same with the default mode's wait before each unpatch: the waiting
// launch holds `launching` while it polls, and the loads put changes off.
TEST_F(SanitizerSource, ModulesLoadAndUnloadWhileOtherThreadsPatchAndUnpatchWithTheWait) {
  load_and_launch_on_threads(measurement_policy::on_demand, std::chrono::milliseconds(5));
  // Each stream's measured kernel still runs at its second launch, so an
  // unpatch there must wait; most are put off by the other threads' calls.
  EXPECT_GT(source->stats().modules_unpatched + source->stats().changes_deferred, 10u);
}

// --precise never unpatches, and every launch takes a table (its locks and
// Sanitizer API calls) while modules load and unload on other threads.
TEST_F(SanitizerSource, ModulesLoadAndUnloadWhileOtherThreadsLaunchMeasured) {
  load_and_launch_on_threads(measurement_policy::every_launch);
  EXPECT_GT(source->stats().measured, 1000u);
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

// Note [Module changes back off]: a loop that keeps its stream busy asks it
// again only after ever longer gaps, and a context synchronize (after
// which it is idle) makes the next launch try at once.
TEST_F(SanitizerSource, UnpatchingBacksOffWhileTheStreamStaysBusy) {
  start(measurement_policy::on_demand);
  launch(stream_1, 0, 64);
  source->drain();
  fake_cuda_set_stream_busy(stream_1, true);
  const int before = fake_cuda_stream_queries();
  for (int i = 0; i < 1000; ++i) launch(stream_1, 0, 64);
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  // Tries at launches 1, 2, 4, 8, ..., 512: ten, one query each.
  EXPECT_EQ(fake_cuda_stream_queries() - before, 10);
  EXPECT_EQ(source->stats().changes_deferred, 10u);
  fake_cuda_set_stream_busy(stream_1, false);
  launch(stream_1, 0, 64);  // not due yet: the streams are not asked
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  synchronize();
  launch(stream_1, 0, 64);
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
}

// Patching for a first launch on another stream backs off the same way;
// the launches meanwhile keep their inferred footprints.
TEST_F(SanitizerSource, PatchingForAFirstLaunchBacksOffWhileAStreamStaysBusy) {
  measure_first_then_unpatch();
  fake_cuda_set_stream_busy(stream_1, true);
  const int before = fake_cuda_stream_queries();
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(launch(stream_2, 4096, 64));
  // Tries at launches 1, 2, 4, ..., 64 of the hundred: seven, each asking
  // stream 1 first, which is busy.
  EXPECT_EQ(fake_cuda_stream_queries() - before, 7);
  fake_cuda_set_stream_busy(stream_1, false);
  synchronize();
  EXPECT_TRUE(launch(stream_2, 4096, 64));  // measured once it is safe
}

// Note [A module-loaded callback waits a bounded time]: the driver loads a
// module under its lock while another thread's unpatch waits for that lock
// (UnifiedMemoryStreams hung so on an H200). The callback gives up waiting
// for the unpatch and leaves the module unpatched.
namespace driver_lock_stand_in {
std::mutex lock;  // held by the thread that loads a module
std::atomic<bool> change_waiting{false};
void take() {
  change_waiting = true;
  std::lock_guard held(lock);
}
}  // namespace driver_lock_stand_in

TEST_F(SanitizerSource, AModuleLoadedWhileAnotherIsUnpatchedIsNotWaitedFor) {
  start(measurement_policy::on_demand);
  launch(stream_1, 0, 64);
  source->drain();
  const auto module_b = reinterpret_cast<CUmodule>(0xb000);
  driver_lock_stand_in::change_waiting = false;
  fake_sanitizer_on_module_change(&driver_lock_stand_in::take);
  std::unique_lock driver_lock(driver_lock_stand_in::lock);  // the driver, loading module_b
  std::thread launcher([&] { launch(stream_1, 0, 64); });    // unpatches module_a
  while (!driver_lock_stand_in::change_waiting) std::this_thread::yield();
  auto loaded = std::async(std::launch::async,
                           [&] { deliver_module(SANITIZER_CBID_RESOURCE_MODULE_LOADED, module_b); });
  const bool returned = loaded.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  driver_lock.unlock();  // lets a deadlocked pair go, for the test to end
  launcher.join();
  loaded.wait();
  fake_sanitizer_on_module_change(nullptr);
  ASSERT_TRUE(returned) << "the module-loaded callback waited for an unpatch that waited for it";
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
  EXPECT_FALSE(fake_sanitizer_is_patched(module_b));  // left to its first launch
  EXPECT_EQ(source->stats().patches_put_off_at_load, 1u);
}

// Note [A module-loaded callback waits a bounded time]: with --precise, a
// module whose patch was put off at load (another thread's patch held the
// way) is patched at its kernel's first launch, which is measured.
namespace slow_patch {
std::atomic<bool> started{false};
void hold_once() {
  if (started.exchange(true)) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
}
}  // namespace slow_patch

TEST_F(SanitizerSource, PreciseMeasuresTheFirstLaunchOfAModuleWhosePatchWasPutOff) {
  start(measurement_policy::every_launch);
  deliver_module(SANITIZER_CBID_RESOURCE_MODULE_UNLOAD_STARTING, module_a);
  slow_patch::started = false;
  fake_sanitizer_on_module_change(&slow_patch::hold_once);
  std::thread other([] {  // loads another module, whose patch is slow
    deliver_module(SANITIZER_CBID_RESOURCE_MODULE_LOADED, reinterpret_cast<CUmodule>(0xc000));
  });
  while (!slow_patch::started) std::this_thread::yield();
  deliver_module(SANITIZER_CBID_RESOURCE_MODULE_LOADED, module_a);  // module_a loads again
  other.join();
  fake_sanitizer_on_module_change(nullptr);
  EXPECT_EQ(source->stats().patches_put_off_at_load, 1u);
  EXPECT_TRUE(launch(stream_1, 0, 64));  // patched now, and measured
  source->drain();
  ASSERT_EQ(launches().size(), 1u);
  EXPECT_EQ(launches()[0].at(0).origin, access_origin::measured);
}

// Note [No module change while a module loads]: while another thread is
// inside cuModuleLoadData, a launch that wants nothing leaves the module
// patched; the synchronize after the load unpatches it. The module calls
// keep their callbacks.
TEST_F(SanitizerSource, NoModuleIsUnpatchedWhileAnotherThreadLoadsOne) {
  start(measurement_policy::on_demand);
  EXPECT_FALSE(fake_sanitizer_callback_switched_off(SANITIZER_CB_DOMAIN_DRIVER_API,
                                                    SANITIZER_CBID_DRIVER_API_cuModuleLoadData));
  launch(stream_1, 0, 64);
  source->drain();
  std::promise<void> entered, done;
  std::thread loader([&] {
    api(SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuModuleLoadData,
        "cuModuleLoadData", nullptr, [&] {
          entered.set_value();
          done.get_future().wait();
        });
  });
  entered.get_future().wait();
  launch(stream_1, 0, 64);  // nothing wanted: an unpatch, but not during the load
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  EXPECT_EQ(source->stats().changes_deferred, 1u);
  done.set_value();
  loader.join();
  synchronize();
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
}

// Note [Waiting for a module's streams to drain]: asked to, the first
// unpatch try after a patch waits for work that drains; later tries do
// not, until the module is patched again.
TEST_F(SanitizerSource, AnUnpatchWaitsForTheStreamsToDrainWhenAsked) {
  start(measurement_policy::on_demand);
  source->set_unpatch_wait(std::chrono::milliseconds(1000));
  launch(stream_1, 0, 64);
  source->drain();
  fake_cuda_set_stream_busy_for(stream_1, 3);  // the measured kernel still runs
  launch(stream_1, 0, 64);
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
}

// Note [Launches read back before an unpatch]: the measured kernel was
// still running at the next launch's entry, and ends during the wait; its
// launch, not yet read back, held the unpatch off.
TEST_F(SanitizerSource, AnUnpatchReadsBackTheLaunchesThatEndedDuringItsWait) {
  start(measurement_policy::on_demand);
  source->set_unpatch_wait(std::chrono::milliseconds(1000));
  fake_cuda_hold_events(true);
  EXPECT_TRUE(launch(stream_1, 0, 64));  // measured; its kernel runs on
  fake_cuda_set_stream_busy_for(stream_1, 3);
  fake_cuda_complete_events_when_a_stream_drains(true);
  launch(stream_1, 0, 64);  // the wait: drained, read back, unpatched
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
  fake_cuda_complete_events_when_a_stream_drains(false);
  fake_cuda_hold_events(false);
  source->drain();
  ASSERT_EQ(launches().size(), 2u);
  EXPECT_EQ(launches()[0].at(0).origin, access_origin::measured);
}

TEST_F(SanitizerSource, AnUnpatchWaitsOnlyOnTheFirstTryAfterAPatch) {
  start(measurement_policy::on_demand);
  source->set_unpatch_wait(std::chrono::milliseconds(2));
  launch(stream_1, 0, 64);
  source->drain();
  fake_cuda_set_stream_busy(stream_1, true);  // never drains
  launch(stream_1, 0, 64);                    // waits 2 ms in vain
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  const int before = fake_cuda_stream_queries();
  for (int i = 0; i < 999; ++i) launch(stream_1, 0, 64);
  // The later tries (launches 2, 4, ..., 512 of the thousand) ask once
  // each.
  EXPECT_EQ(fake_cuda_stream_queries() - before, 9);
  fake_cuda_set_stream_busy(stream_1, false);
}

// A new patch (a first launch on another stream, measured) brings it back.
TEST_F(SanitizerSource, APatchBringsTheWaitBack) {
  ASSERT_NO_FATAL_FAILURE(
      unpatch_through_the_wait_then_patch_again(std::chrono::milliseconds(1000)));
  fake_cuda_set_stream_busy_for(stream_2, 3);
  launch(stream_2, 0, 64);  // waits again: drained, unpatched
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
}

// A synchronize starts a new round of tries (Note [Module changes back
// off]) but not a new wait: a program whose kernels outlast the wait would
// otherwise pay it at every synchronize.
TEST_F(SanitizerSource, ASynchronizeDoesNotBringTheWaitBack) {
  ASSERT_NO_FATAL_FAILURE(unpatch_through_the_wait_then_patch_again(std::chrono::milliseconds(50)));
  fake_cuda_set_stream_busy(stream_2, true);
  fake_cuda_set_stream_busy_for(stream_1, 0);
  launch(stream_2, 0, 64);  // the wait once more, in vain (50 ms)
  ASSERT_TRUE(fake_sanitizer_is_patched(module_a));
  synchronize_stream(stream_1);  // a new round; stream 2 still busy
  ASSERT_TRUE(fake_sanitizer_is_patched(module_a));
  fake_cuda_set_stream_busy(stream_2, false);
  fake_cuda_set_stream_busy_for(stream_2, 3);  // drains after 3 queries
  launch(stream_2, 0, 64);  // tries at once, and does not wait
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  fake_cuda_set_stream_busy_for(stream_2, 0);
}

TEST_F(SanitizerSource, WithoutTheWaitAnUnpatchDoesNotWaitForDrainingWork) {
  start(measurement_policy::on_demand);
  launch(stream_1, 0, 64);
  source->drain();
  fake_cuda_set_stream_busy_for(stream_1, 3);
  launch(stream_1, 0, 64);
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  fake_cuda_set_stream_busy_for(stream_1, 0);
}

// The same after a stream synchronize (a training loop's loss.item()).
TEST_F(SanitizerSource, AStreamSynchronizeMakesTheNextLaunchTryToUnpatch) {
  start(measurement_policy::on_demand);
  launch(stream_1, 0, 64);
  source->drain();
  fake_cuda_set_stream_busy(stream_1, true);
  for (int i = 0; i < 100; ++i) launch(stream_1, 0, 64);
  fake_cuda_set_stream_busy(stream_1, false);
  launch(stream_1, 0, 64);  // not due yet
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  synchronize_stream(stream_1);
  launch(stream_1, 0, 64);
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
}

// Note [Unpatched at a synchronize]: the synchronize itself unpatches a
// module whose last launch wanted nothing, with no launch of it after.
TEST_F(SanitizerSource, ASynchronizeUnpatchesAModuleWhoseLastLaunchWantedNothing) {
  start(measurement_policy::on_demand);
  launch(stream_1, 0, 64);
  source->drain();
  fake_cuda_set_stream_busy(stream_1, true);
  launch(stream_1, 0, 64);  // wants nothing; not now
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  // STREAMSAN_DEBUG says why it is still patched.
  const auto now = source->stats().patched_now;
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].kernel, "fill(float*, int)");
  EXPECT_FALSE(now[0].wanted_at_last_launch);
  EXPECT_EQ(now[0].busy_streams, 1u);
  fake_cuda_set_stream_busy(stream_1, false);
  synchronize_stream(stream_1);
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
  EXPECT_FALSE(fake_sanitizer_domain_enabled(SANITIZER_CB_DOMAIN_LAUNCH));
  EXPECT_EQ(source->stats().unpatched_at_synchronize, 1u);
  EXPECT_EQ(source->stats().modules_patched_now, 0u);
}

// Note [Unpatched at a synchronize]: a module patched when it loaded and
// never launched from wants nothing; its first launch patches it again.
TEST_F(SanitizerSource, ASynchronizeUnpatchesAModuleNeverLaunchedFrom) {
  start(measurement_policy::on_demand);
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  EXPECT_TRUE(fake_sanitizer_domain_enabled(SANITIZER_CB_DOMAIN_LAUNCH));
  synchronize();
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
  EXPECT_FALSE(fake_sanitizer_domain_enabled(SANITIZER_CB_DOMAIN_LAUNCH));
  EXPECT_EQ(source->stats().unpatched_at_synchronize, 1u);
  EXPECT_TRUE(launch(stream_1, 0, 64));  // its first launch is still measured
  source->drain();
  EXPECT_EQ(launches().at(0).at(0).origin, access_origin::measured);
}

// A module whose last launch was measured may have more first launches to
// come (the next stream's): it stays patched.
TEST_F(SanitizerSource, ASynchronizeLeavesAModuleWhoseLastLaunchWasMeasured) {
  start(measurement_policy::on_demand);
  EXPECT_TRUE(launch(stream_1, 0, 64));
  synchronize();
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
}

// Nor while its kernels may run: a synchronize of another stream.
TEST_F(SanitizerSource, ASynchronizeLeavesAModuleWhoseKernelsMayRun) {
  start(measurement_policy::on_demand);
  launch(stream_1, 0, 64);
  source->drain();
  fake_cuda_set_stream_busy(stream_1, true);
  launch(stream_1, 0, 64);
  synchronize_stream(stream_2);
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  fake_cuda_set_stream_busy(stream_1, false);
}

TEST_F(SanitizerSource, AModuleIsNotPatchedWhileItsKernelsMayRunAndTheLaunchStaysInferred) {
  measure_first_then_unpatch();
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
  const stream_params destroy{stream_1};
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

// Note [Stamps written through remembered slots]: a synchronize that
// forgets a stream's work frees its entry; the next launch there must make
// a new one, not write where the old one was.
TEST_F(SanitizerSource, ALaunchAfterASynchronizeForgotItsStreamIsWatchedAgain) {
  measure_first_then_unpatch();  // stream 1's entry remembered by this thread
  synchronize();                 // forgets it
  EXPECT_FALSE(launch(stream_1, 0, 64));  // nothing wanted: stream 1 runs it
  fake_cuda_set_stream_busy(stream_1, true);
  model.stream_created({}, reinterpret_cast<std::uintptr_t>(stream_2), 0, 0);
  // The first launch on stream 2 wants a measurement, but no patch while
  // stream 1's kernel may run.
  EXPECT_FALSE(launch(stream_2, 0, 64));
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
  fake_cuda_set_stream_busy(stream_1, false);
}

// The same when the stream is destroyed and its handle comes back.
TEST_F(SanitizerSource, AStreamHandleReusedAfterADestroyIsWatchedAgain) {
  measure_first_then_unpatch();
  const stream_params destroy{stream_1};
  api(SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuStreamDestroy_v2,
      "cuStreamDestroy_v2", &destroy);  // idle: its entry goes
  model.stream_created({}, reinterpret_cast<std::uintptr_t>(stream_1), 0, 0);
  launch(stream_1, 0, 64);
  source->drain();
  fake_cuda_set_stream_busy(stream_1, true);
  model.stream_created({}, reinterpret_cast<std::uintptr_t>(stream_2), 0, 0);
  EXPECT_FALSE(launch(stream_2, 0, 64));  // no patch while stream 1's kernel may run
  EXPECT_FALSE(fake_sanitizer_is_patched(module_a));
  fake_cuda_set_stream_busy(stream_1, false);
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
    const stream_params destroy{stream_2};
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

// Note [Settled launches]: a kernel whose module was unloaded and loaded
// again is a new kernel, whose first launch on a stream is measured, though
// this thread had settled its handle and stream before.
TEST_F(SanitizerSource, AnUnloadUnsettlesTheThreadsLaunches) {
  start(measurement_policy::on_demand);
  EXPECT_TRUE(launch(stream_1, 0, 64));
  source->drain();
  EXPECT_FALSE(launch(stream_1, 0, 64));  // settled
  deliver_module(SANITIZER_CBID_RESOURCE_MODULE_UNLOAD_STARTING, module_a);
  deliver_module(SANITIZER_CBID_RESOURCE_MODULE_LOADED, module_a);
  EXPECT_TRUE(launch(stream_1, 0, 64));
}

// Outside a graph launch call the source saw (an upload, a launch from the
// device), a node is not measured: nothing gets a table.
TEST_F(SanitizerSource, AGraphNodeOutsideAGraphLaunchCallGetsNoTable) {
  start(measurement_policy::every_launch);
  Sanitizer_GraphNodeLaunchData n{};
  n.nodeType = CU_GRAPH_NODE_TYPE_KERNEL;
  n.launchData.module = module_a;
  n.launchData.function = fill;
  n.launchData.hLaunch = reinterpret_cast<Sanitizer_LaunchHandle>(0x999);
  fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_GRAPHS, SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN, &n);
  EXPECT_TRUE(fake_sanitizer_userdata_set(n.launchData.hLaunch));
  EXPECT_EQ(fake_sanitizer_userdata(n.launchData.hLaunch), nullptr);
  EXPECT_EQ(fake_sanitizer_function_data(fill), nullptr);
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

// ---- Note [A decoding job that throws] ----

class SanitizerSourceDecodeFailures : public SanitizerSource {
 protected:
  std::atomic<int> decodes{0};

  // --precise, and the decodes `first` to `last` (counted from 1) throw.
  void start_throwing(int first, int last) {
    start(measurement_policy::every_launch);
    source->set_decode_hook([this, first, last] {
      const int n = ++decodes;
      if (n >= first && n <= last) throw std::runtime_error("out of memory sorting pages (test)");
    });
  }

  // Three launches and a synchronize, all held behind the first launch
  // until its kernel completes; the second launch's decode throws. It is
  // handed over unmeasured at once: the records behind it go on, in order,
  // with no release at exit (drain() does none), and its kernel is named.
  void expect_the_log_to_go_on_past_a_decode_that_throws() {
    start_throwing(2, 2);
    fake_cuda_hold_events(true);
    launch(stream_1, 0, 64);
    launch(stream_1, 4096, 64);
    synchronize();
    launch(stream_1, 8192, 64);
    EXPECT_TRUE(launches().empty());  // held behind the first
    EXPECT_GT(resolver.held(), 0u);
    fake_cuda_complete_events();
    source->drain();
    EXPECT_EQ(resolver.awaiting(), 0u);
    EXPECT_EQ(resolver.held(), 0u);
    std::vector<std::string> seen;
    std::uint64_t last_seq = 0;
    for (const auto& c : sink.records) {
      EXPECT_GT(c.header.seq, last_seq);
      last_seq = c.header.seq;
      if (std::holds_alternative<device_synchronize>(c.body)) seen.emplace_back("synchronize");
      if (std::holds_alternative<kernel_launch>(c.body)) {
        EXPECT_EQ(c.accesses.size(), 1u);
        seen.push_back(c.accesses.empty() ? "no access"
                       : c.accesses[0].origin == access_origin::measured ? "measured"
                                                                          : "inferred");
      }
    }
    EXPECT_EQ(seen, (std::vector<std::string>{"measured", "inferred", "synchronize", "measured"}));
    const auto stats = source->stats();
    EXPECT_EQ(stats.measured, 3u);
    EXPECT_EQ(stats.failed, 1u);
    EXPECT_EQ(stats.decode_failed, 1u);
    EXPECT_EQ(stats.jobs_thrown, 0u);
    EXPECT_EQ(source->decode_failures(),
              (std::vector<std::string>{
                  "kernel fill(float*, int), 1 launch: out of memory sorting pages (test)"}));
  }
};

TEST_F(SanitizerSourceDecodeFailures, TheLogGoesOnPastALaunchWhoseDecodeThrew) {
  expect_the_log_to_go_on_past_a_decode_that_throws();
}

TEST_F(SanitizerSourceDecodeFailures, TheLogGoesOnPastALaunchWhoseDecodeThrewOnTheDecodingThread) {
  decode_thread = true;
  expect_the_log_to_go_on_past_a_decode_that_throws();
}

// More decodes throw than the tracker has scratches (four): each gives its
// scratch back, so the read-backs after them neither wait for ever nor
// stop, and the kernel is named once, with its count.
TEST_F(SanitizerSourceDecodeFailures, DecodesThatKeepThrowingNeitherHangNorStopTheNext) {
  decode_thread = true;
  start_throwing(1, 6);
  for (std::uint64_t i = 0; i < 7; ++i) EXPECT_TRUE(launch(stream_1, 4096 * i, 64));
  source->drain();
  const auto l = launches();
  ASSERT_EQ(l.size(), 7u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(l[i].at(0).origin, access_origin::inferred) << i;
  EXPECT_EQ(l[6].at(0).origin, access_origin::measured);
  EXPECT_EQ(source->stats().failed, 6u);
  EXPECT_EQ(source->decode_failures(),
            (std::vector<std::string>{
                "kernel fill(float*, int), 6 launches: out of memory sorting pages (test)"}));
}

// ---- graph kernel nodes (Note [Which graph nodes are measured]) ----

const auto scale = reinterpret_cast<CUfunction>(0x5ca1e);
constexpr std::uintptr_t graph_handle = 0x9000, exec_handle = 0x9100;

class SanitizerSourceGraphs : public SanitizerSource {
 protected:
  // One kernel node: its function writes `bytes` bytes at buffer + offset.
  struct node {
    CUfunction function;
    std::uint64_t offset;
    std::uint64_t bytes;
    CUmodule module = module_a;
  };
  std::vector<node> nodes;
  std::vector<std::vector<std::uint64_t>> words;
  std::vector<std::vector<void*>> pointers;
  engine eng;
  // What each node callback saw as its function's data, and whether it
  // left the node null per-launch data.
  std::vector<void*> seen_data;
  std::vector<bool> null_launch_data;

  void start_graphs(measurement_policy policy,
                    graph_node_measurement measure = graph_node_measurement::on) {
    graph_nodes = measure;
    resolver.add_downstream(eng);  // before start() logs the buffer
    start(policy);
    driver.kernels[reinterpret_cast<std::uintptr_t>(scale)] =
        kernel_description{"_Z5scalePfi", {{0, 8}, {8, 4}}, true};
    fake_cuda_define_function(scale, module_a, "_Z5scalePfi");
  }
  // Instantiates a graph of `nodes` without edges (node i's handle 0xa0 + i).
  void instantiate() {
    node_launch_base_ += 0x1000;
    raw_graph g;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      raw_graph_node r;
      r.kind = raw_node_kind::kernel;
      r.handle = 0xa0 + i;
      r.kernel = reinterpret_cast<std::uintptr_t>(nodes[i].function);
      words.push_back({buffer + nodes[i].offset, nodes[i].bytes / 4});
      auto& w = words.back();
      pointers.push_back({&w[0], &w[1]});
      r.args = kernel_arguments::from_pointers(pointers.back().data());
      g.nodes.push_back(r);
    }
    driver.graphs[graph_handle] = g;
    if (instantiate_through_the_api) {  // the entry callback, as the driver's
      Sanitizer_CallbackData d{};
      d.callbackSite = SANITIZER_API_ENTER;
      d.functionName = "cuGraphInstantiateWithFlags";
      d.context = ctx;
      fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_DRIVER_API,
                             SANITIZER_CBID_DRIVER_API_cuGraphInstantiateWithFlags, &d);
    }
    model.graph_instantiated({}, exec_handle, graph_handle);
  }
  bool instantiate_through_the_api = false;
  // A node callback's data for a fill node of the exec launched by `p`.
  Sanitizer_GraphNodeLaunchData fill_node(const graph_launch_params& p, std::uintptr_t node,
                                          std::uintptr_t launch) const {
    Sanitizer_GraphNodeLaunchData n{};
    n.graphExec = p.hGraph;
    n.node = reinterpret_cast<CUgraphNode>(node);
    n.nodeType = CU_GRAPH_NODE_TYPE_KERNEL;
    n.launchData.context = ctx;
    n.launchData.stream = p.hStream;
    n.launchData.hStream = reinterpret_cast<Sanitizer_StreamHandle>(p.hStream);
    n.launchData.module = module_a;
    n.launchData.function = fill;
    n.launchData.functionName = "_Z4fillPfi";
    n.launchData.hLaunch = reinterpret_cast<Sanitizer_LaunchHandle>(launch);
    return n;
  }
  // A node's hLaunch is the same at every launch of one exec, so per-launch
  // data given to it stays (Note [A graph node keeps its per-launch data]).
  std::uintptr_t node_launch_base_ = 0x100000;
  // One cuGraphLaunch on stream_1: each node's callback, then the node
  // "runs" (writes its bytes through its function's data, if any).
  void launch_graph() {
    enter_graph_launch();
    submit_nodes();
    exit_graph_launch();
  }
  graph_launch_params params_{};
  std::vector<std::pair<const sp::table_view*, const node*>> bound_;
  void enter_graph_launch() {
    params_ = graph_launch_params{reinterpret_cast<CUgraphExec>(exec_handle), stream_1};
    deliver_graph_launch(SANITIZER_API_ENTER);
  }
  void deliver_graph_launch(Sanitizer_ApiCallbackSite site) {
    static const CUresult ok = CUDA_SUCCESS;
    Sanitizer_CallbackData d{};
    d.callbackSite = site;
    d.functionName = "cuGraphLaunch";
    d.functionParams = &params_;
    d.context = ctx;
    if (site == SANITIZER_API_EXIT) d.functionReturnValue = &ok;
    fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuGraphLaunch, &d);
  }
  // The node callbacks. As the H200 probes showed (Note [Which graph nodes
  // are measured]), a node with per-launch data (even null) writes into
  // nothing we see, and the others into their function's data as the last
  // callback left it.
  void submit_nodes() {
    seen_data.clear();
    null_launch_data.clear();
    bound_.clear();
    std::vector<Sanitizer_LaunchHandle> launches;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      Sanitizer_GraphNodeLaunchData n{};
      n.graphExec = params_.hGraph;
      n.node = reinterpret_cast<CUgraphNode>(0xa0 + i);
      n.nodeType = CU_GRAPH_NODE_TYPE_KERNEL;
      n.launchData.context = ctx;
      n.launchData.stream = stream_1;
      n.launchData.hStream = reinterpret_cast<Sanitizer_StreamHandle>(stream_1);
      n.launchData.module = nodes[i].module;
      n.launchData.function = nodes[i].function;
      n.launchData.functionName = nodes[i].function == fill ? "_Z4fillPfi" : "_Z5scalePfi";
      n.launchData.hLaunch = reinterpret_cast<Sanitizer_LaunchHandle>(node_launch_base_ + i);
      fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_GRAPHS, SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN, &n);
      launches.push_back(n.launchData.hLaunch);
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const bool own_data = fake_sanitizer_userdata_set(launches[i]);
      if (fake_sanitizer_is_patched(nodes[i].module) && !own_data &&
          !fake_sanitizer_function_data_set(nodes[i].function)) {
        ADD_FAILURE() << "node " << i << " runs patched code with neither per-launch data nor "
                      << "its function's data set: a wild pointer";
      }
      auto* table = own_data ? nullptr
                             : static_cast<const sp::table_view*>(
                                   fake_sanitizer_function_data(nodes[i].function));
      seen_data.push_back(const_cast<sp::table_view*>(table));
      null_launch_data.push_back(own_data && fake_sanitizer_userdata(launches[i]) == nullptr);
      bound_.emplace_back(table, &nodes[i]);
    }
  }
  // The graph runs before the call returns here; what matters is the table
  // each node was bound to.
  void exit_graph_launch() {
    for (const auto& [table, n] : bound_) {
      if (table != nullptr) sp::record_span(*table, buffer + n->offset, n->bytes, sp::footprint_kind::write);
    }
    deliver_graph_launch(SANITIZER_API_EXIT);
  }
  // The node accesses of the last graph logged.
  const std::vector<std::vector<access>>& last_graph() const {
    return sink.last<graph_instantiate>().node_accesses;
  }
  std::vector<diagnostic_certainty> certainties() const {
    std::vector<diagnostic_certainty> out;
    for (const auto& d : eng.diagnostics()) {
      EXPECT_EQ(d.kind, diagnostic_kind::graph_node_race);
      out.push_back(d.certainty);
    }
    return out;
  }
};

TEST_F(SanitizerSourceGraphs, NodesOfDistinctKernelsAreMeasuredAndTiedToTheirNodes) {
  start_graphs(measurement_policy::every_launch);
  nodes = {{fill, 0, 400}, {scale, 8192, 64}};
  instantiate();
  launch_graph();
  EXPECT_NE(seen_data[0], nullptr);
  EXPECT_NE(seen_data[1], nullptr);
  EXPECT_NE(seen_data[0], seen_data[1]);
  source->drain();
  const auto& g = last_graph();
  ASSERT_EQ(g.size(), 2u);
  ASSERT_EQ(g[0].size(), 1u);
  EXPECT_EQ(g[0][0].origin, access_origin::measured);
  EXPECT_EQ(g[0][0].range.offset, 0u);
  EXPECT_EQ(g[0][0].range.size, 400u);
  ASSERT_EQ(g[1].size(), 1u);
  EXPECT_EQ(g[1][0].origin, access_origin::measured);
  EXPECT_EQ(g[1][0].range.offset, 8192u);
  EXPECT_EQ(g[1][0].range.size, 64u);
  // The launch comes after the graph it applies.
  EXPECT_TRUE(std::holds_alternative<graph_launch>(sink.records.back().body));
}

TEST_F(SanitizerSourceGraphs, NodesAreNotMeasuredUnlessGraphNodeMeasurementIsOn) {
  start_graphs(measurement_policy::every_launch, graph_node_measurement::off);
  nodes = {{fill, 0, 400}, {scale, 8192, 64}};
  instantiate();
  launch_graph();
  EXPECT_EQ(seen_data[0], nullptr);
  EXPECT_EQ(seen_data[1], nullptr);
  source->drain();
  const auto& g = last_graph();
  ASSERT_EQ(g.size(), 2u);
  ASSERT_FALSE(g[0].empty());
  EXPECT_EQ(g[0][0].origin, access_origin::inferred);
}

// Note [A graph node keeps its per-launch data]: the second fill node got
// null per-launch data at the first launch and keeps it, so it is never
// measured (its table would stay empty); the first one is measured at
// every launch.
TEST_F(SanitizerSourceGraphs, ANodeGivenLaunchDataIsNeverMeasured) {
  start_graphs(measurement_policy::every_launch);
  nodes = {{fill, 0, 400}, {scale, 8192, 64}, {fill, 4096, 400}};
  instantiate();
  for (int launch = 0; launch < 3; ++launch) {
    launch_graph();
    EXPECT_EQ(null_launch_data, (std::vector<bool>{false, false, true}));
    source->drain();
    const auto& g = last_graph();
    EXPECT_EQ(g.at(0).at(0).origin, access_origin::measured);
    EXPECT_EQ(g.at(0).at(0).range.offset, 0u);
    EXPECT_EQ(g.at(0).at(0).range.size, 400u);
    EXPECT_EQ(g.at(1).at(0).origin, access_origin::measured);
    EXPECT_EQ(g.at(2).at(0).origin, access_origin::inferred);
  }
}

// Note [Unmeasured graph nodes read null]: a launch that measures nothing
// leaves every node without per-launch data, so a later launch that a
// candidate asks for can still measure the kernel's first node.
TEST_F(SanitizerSourceGraphs, ALaunchThatMeasuresNothingLeavesTheNodesMeasurable) {
  start_graphs(measurement_policy::on_demand);
  nodes = {{fill, 0, 400}, {fill, 4096, 400}};
  instantiate();
  launch_graph();
  EXPECT_EQ(null_launch_data, (std::vector<bool>{false, false}));
  EXPECT_EQ(seen_data, (std::vector<void*>{nullptr, nullptr}));
  source->measure_kernel("fill(float*, int)", 1);
  launch_graph();
  EXPECT_EQ(null_launch_data, (std::vector<bool>{false, true}));
  EXPECT_NE(seen_data[0], nullptr);
  source->drain();
  EXPECT_EQ(last_graph().at(0).at(0).origin, access_origin::measured);
}

// Note [Unpatched at a synchronize]: a module whose kernels ran only as
// graph nodes keeps its patch, so that a candidate can still have one of
// them measured (a graph launch patches nothing).
TEST_F(SanitizerSourceGraphs, ASynchronizeLeavesAModuleOfGraphNodesPatched) {
  start_graphs(measurement_policy::on_demand);
  nodes = {{fill, 0, 400}};
  instantiate();
  launch_graph();
  synchronize();
  EXPECT_TRUE(fake_sanitizer_is_patched(module_a));
  source->measure_kernel("fill(float*, int)", 1);
  launch_graph();
  EXPECT_NE(seen_data[0], nullptr);
}

// A node that got null per-launch data outside a graph launch call (an
// upload submitted it) is not measured later either.
TEST_F(SanitizerSourceGraphs, ANodeAnUploadGaveNullLaunchDataIsNeverMeasured) {
  start_graphs(measurement_policy::every_launch);
  nodes = {{scale, 8192, 64}, {fill, 0, 400}};
  instantiate();
  graph_launch_params p{reinterpret_cast<CUgraphExec>(exec_handle), stream_1};
  // An upload submits the nodes outside a graph launch call: null, kept.
  Sanitizer_GraphNodeLaunchData n = fill_node(p, 0xa1, node_launch_base_ + 1);
  n.isGraphUpload = 1;
  fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_GRAPHS, SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN, &n);
  launch_graph();
  EXPECT_EQ(null_launch_data, (std::vector<bool>{false, true}));
  source->drain();
  EXPECT_EQ(last_graph().at(1).at(0).origin, access_origin::inferred);
}

// What the nodes of an exec were given is kept per exec: a destroyed exec's
// handle, reused, starts over.
TEST_F(SanitizerSourceGraphs, ADestroyedExecsNodesAreForgotten) {
  start_graphs(measurement_policy::every_launch);
  nodes = {{fill, 0, 400}, {fill, 4096, 400}};
  instantiate();
  launch_graph();
  EXPECT_EQ(null_launch_data, (std::vector<bool>{false, true}));
  graph_exec_params p{reinterpret_cast<CUgraphExec>(exec_handle)};
  Sanitizer_CallbackData d{};
  d.callbackSite = SANITIZER_API_ENTER;
  d.functionName = "cuGraphExecDestroy";
  d.functionParams = &p;
  d.context = ctx;
  fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuGraphExecDestroy, &d);
  // Node 0xa1 is now the first fill node of a new exec under that handle.
  nodes = {{scale, 8192, 64}, {fill, 4096, 400}};
  instantiate();
  launch_graph();
  EXPECT_EQ(null_launch_data, (std::vector<bool>{false, false}));
}

// Patched code reads whatever data a node carries: a node that is not
// measured reads its function's data, set to null (Note [Unmeasured graph
// nodes read null]), and gets no per-launch data, which it would keep.
TEST_F(SanitizerSourceGraphs, UnmeasuredNodesOfAPatchedModuleReadNullFunctionData) {
  start_graphs(measurement_policy::every_launch, graph_node_measurement::off);
  nodes = {{fill, 0, 400}, {scale, 8192, 64}};
  instantiate();
  launch_graph();
  EXPECT_EQ(null_launch_data, (std::vector<bool>{false, false}));
  EXPECT_EQ(seen_data, (std::vector<void*>{nullptr, nullptr}));
  EXPECT_TRUE(fake_sanitizer_function_data_set(fill));
  EXPECT_TRUE(fake_sanitizer_function_data_set(scale));
}

TEST_F(SanitizerSourceGraphs, OnlyTheMeasuredNodeCarriesNoLaunchData) {
  start_graphs(measurement_policy::every_launch);
  nodes = {{fill, 0, 400}, {scale, 8192, 64}, {fill, 4096, 400}};
  instantiate();
  launch_graph();
  EXPECT_EQ(null_launch_data, (std::vector<bool>{false, false, true}));
}

// A graph launch on another thread with a fill node, while this one's fill
// node has the table: the table is dropped (Note [Which graph nodes are
// measured]), and the node may write into it until the graph has run, so
// no launch may get it back meanwhile.
TEST_F(SanitizerSourceGraphs, ADroppedTableIsNotReusedWhileTheGraphRuns) {
  start_graphs(measurement_policy::every_launch);
  nodes = {{fill, 0, 400}, {scale, 8192, 64}};
  instantiate();
  fake_cuda_hold_events(true);
  enter_graph_launch();
  submit_nodes();
  void* const dropped = seen_data[0];
  ASSERT_NE(dropped, nullptr);
  std::thread([&] {
    graph_launch_params p{reinterpret_cast<CUgraphExec>(exec_handle + 1), stream_2};
    Sanitizer_CallbackData d{};
    d.callbackSite = SANITIZER_API_ENTER;
    d.functionName = "cuGraphLaunch";
    d.functionParams = &p;
    d.context = ctx;
    fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuGraphLaunch, &d);
    const Sanitizer_GraphNodeLaunchData n = fill_node(p, 0xf0, 0xfff0);
    fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_GRAPHS, SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN, &n);
    // Not measured (another launch runs fill): its function's data is null.
    EXPECT_FALSE(fake_sanitizer_userdata_set(n.launchData.hLaunch));
    EXPECT_EQ(fake_sanitizer_function_data(fill), nullptr);
    const CUresult ok = CUDA_SUCCESS;
    d.callbackSite = SANITIZER_API_EXIT;
    d.functionReturnValue = &ok;
    fake_sanitizer_deliver(SANITIZER_CB_DOMAIN_DRIVER_API, SANITIZER_CBID_DRIVER_API_cuGraphLaunch, &d);
  }).join();
  exit_graph_launch();
  launch_graph();  // its fill node asks the pool for a table alike
  EXPECT_NE(seen_data[0], nullptr);
  EXPECT_NE(seen_data[0], dropped);
  fake_cuda_hold_events(false);
  source->drain();
  EXPECT_EQ(last_graph().at(0).at(0).origin, access_origin::measured);
}

TEST_F(SanitizerSourceGraphs, PerFunctionDataIsNullAgainAfterTheLaunch) {
  start_graphs(measurement_policy::every_launch);
  nodes = {{fill, 0, 400}, {scale, 8192, 64}};
  instantiate();
  launch_graph();
  EXPECT_NE(seen_data[0], nullptr);
  EXPECT_EQ(fake_sanitizer_function_data(fill), nullptr);
  EXPECT_EQ(fake_sanitizer_function_data(scale), nullptr);
  // An ordinary launch of the kernel afterwards gets its own table.
  EXPECT_TRUE(launch(stream_2, 0, 64));
}

// Note [Graph candidates wait for a launch]: the instantiation's inferred
// footprints (each node writes the whole buffer) make a candidate that the
// measured launch replaces.
TEST_F(SanitizerSourceGraphs, MeasuredNodesThatOverlapRaceConfirmed) {
  start_graphs(measurement_policy::every_launch);
  nodes = {{fill, 0, 4096}, {scale, 4092, 4096}};
  instantiate();
  launch_graph();
  source->drain();
  EXPECT_EQ(certainties(), std::vector{diagnostic_certainty::confirmed});
  EXPECT_EQ(eng.diagnostics().at(0).overlap_offset, 4092u);
  EXPECT_EQ(eng.diagnostics().at(0).overlap_size, 4u);
}

TEST_F(SanitizerSourceGraphs, MeasuredNodesOnDisjointHalvesLeaveNoCandidate) {
  start_graphs(measurement_policy::every_launch);
  nodes = {{fill, 0, 4096}, {scale, 4096, 4096}};
  instantiate();
  launch_graph();
  source->drain();
  EXPECT_TRUE(certainties().empty());
}

// A kernel first launched into a capture loads its module then, unpatched
// (Note [Nothing of ours while a stream captures]).
class SanitizerSourceCapturedModule : public SanitizerSourceGraphs {
 protected:
  const CUmodule module_b = reinterpret_cast<CUmodule>(0xb000);
  void load_module_b_while_capturing(
      measurement_policy policy = measurement_policy::every_launch) {
    start_graphs(policy);
    fake_cuda_define_function(scale, module_b, "_Z5scalePfi");
    const auto capturing = stream_arg{reinterpret_cast<std::uintptr_t>(stream_2)};
    model.capture_began({}, capturing);
    deliver_module(SANITIZER_CBID_RESOURCE_MODULE_LOADED, module_b);
    model.capture_ended({}, capturing, 0);
    EXPECT_FALSE(fake_sanitizer_is_patched(module_b));
  }
};

// Note [Patched before a graph is instantiated]: --precise patches it at
// the next instantiation, and the graph's nodes of it are measured.
TEST_F(SanitizerSourceCapturedModule, IsPatchedBeforeTheNextGraphIsInstantiated) {
  load_module_b_while_capturing();
  nodes = {{fill, 0, 400}, {scale, 8192, 64, module_b}};
  instantiate_through_the_api = true;
  instantiate();
  EXPECT_TRUE(fake_sanitizer_is_patched(module_b));
  launch_graph();
  EXPECT_NE(seen_data[1], nullptr);
  source->drain();
  EXPECT_EQ(last_graph().at(1).at(0).origin, access_origin::measured);
  EXPECT_EQ(last_graph().at(1).at(0).range.offset, 8192u);
}

// Not while one of its kernels may run (here: a graph launched before, on
// a stream not idle yet): the instantiation after it patches it.
TEST_F(SanitizerSourceCapturedModule, WaitsForTheGraphsBeforeItToEnd) {
  load_module_b_while_capturing();
  nodes = {{fill, 0, 400}};
  instantiate();
  fake_cuda_set_stream_busy(stream_1, true);
  launch_graph();
  nodes = {{fill, 0, 400}, {scale, 8192, 64, module_b}};
  instantiate_through_the_api = true;
  instantiate();
  EXPECT_FALSE(fake_sanitizer_is_patched(module_b));
  fake_cuda_set_stream_busy(stream_1, false);
  instantiate();
  EXPECT_TRUE(fake_sanitizer_is_patched(module_b));
}

// The default mode patches only for a launch it measures, never here.
TEST_F(SanitizerSourceCapturedModule, StaysUnpatchedInTheDefaultMode) {
  load_module_b_while_capturing(measurement_policy::on_demand);
  nodes = {{scale, 8192, 64, module_b}};
  instantiate_through_the_api = true;
  instantiate();
  EXPECT_FALSE(fake_sanitizer_is_patched(module_b));
}

// Note [No patching for a graph launch]: a graph instantiated while it was
// unpatched (here: without the instantiation's callback) keeps it so, and
// its nodes of it inferred.
TEST_F(SanitizerSourceCapturedModule, AGraphLaunchPatchesNoModule) {
  load_module_b_while_capturing();
  nodes = {{fill, 0, 400}, {scale, 8192, 64, module_b}};
  instantiate();
  launch_graph();
  EXPECT_FALSE(fake_sanitizer_is_patched(module_b));
  EXPECT_NE(seen_data[0], nullptr);
  EXPECT_EQ(seen_data[1], nullptr);
  source->drain();
  EXPECT_EQ(last_graph().at(0).at(0).origin, access_origin::measured);
  EXPECT_EQ(last_graph().at(1).at(0).origin, access_origin::inferred);
}

// The default mode measures the nodes a candidate names on the exec's next
// launch: the first launch's candidate is confirmed by the second.
TEST_F(SanitizerSourceGraphs, TheDefaultModeMeasuresNodesACandidateNames) {
  start_graphs(measurement_policy::on_demand);
  nodes = {{fill, 0, 4096}, {scale, 4092, 4096}};
  instantiate();
  launch_graph();
  EXPECT_EQ(seen_data, (std::vector<void*>{nullptr, nullptr}));
  source->drain();
  EXPECT_EQ(certainties(), std::vector{diagnostic_certainty::candidate});
  source->measure_kernel("fill(float*, int)", 1);
  source->measure_kernel("scale(float*, int)", 1);
  launch_graph();
  EXPECT_NE(seen_data[0], nullptr);
  EXPECT_NE(seen_data[1], nullptr);
  source->drain();
  EXPECT_EQ(certainties(), std::vector{diagnostic_certainty::confirmed});
  // Measured once as asked: the third launch is inferred again.
  launch_graph();
  EXPECT_EQ(seen_data, (std::vector<void*>{nullptr, nullptr}));
  source->drain();
  EXPECT_EQ(last_graph().at(0).at(0).origin, access_origin::inferred);
}

}  // namespace
}  // namespace streamsan::injection

namespace streamsan::injection {
namespace {

void load_module_b(void*) {
  deliver_module(SANITIZER_CBID_RESOURCE_MODULE_LOADED, reinterpret_cast<CUmodule>(0xb000));
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
  fake_cuda_hold_events(false);  // the third launch's kernel runs
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
