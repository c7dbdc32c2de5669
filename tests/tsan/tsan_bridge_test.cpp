// The ThreadSanitizer bridge over a model of TSan (model_tsan.h): each test
// is a small CUDA program as the engine sees it, plus the host accesses its
// instrumented code would make, and checks what TSan would report.
#include "sanitizer/tsan/tsan_bridge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "sanitizer/tsan/active_bridge.h"
#include "tests/engine/engine_driver.h"
#include "tests/tsan/model_tsan.h"

namespace streamsan::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

const void* at(std::uint64_t address) { return reinterpret_cast<const void*>(address); }

class TsanBridge : public ::testing::Test {
 protected:
  TsanBridge() : bridge(model_tsan::api(), d.eng().tables()) {
    d.eng().set_order_observer(&bridge);
  }
  ~TsanBridge() override { d.eng().set_order_observer(nullptr); }
  void TearDown() override { EXPECT_THAT(tsan.violations(), IsEmpty()); }

  // engine_driver places allocation N at N * 0x100000.
  const void* address_of(alloc_id a, std::uint64_t offset = 0) {
    return at(0x100000 * std::uint64_t{raw(a)} + offset);
  }
  std::vector<model_report> reports() { return tsan.reports(); }

  model_tsan tsan;
  engine_driver d{true};
  tsan::tsan_bridge bridge;
};

// ---- the five bugs of issue #13, and their fixes ----

TEST_F(TsanBridge, ManagedMemoryReadBeforeEventSynchronize) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto m = d.alloc(256, memory_kind::managed);
  const auto e = d.event();
  d.launch(s, {d.write(m)}, "produce");
  d.record(e, s);
  tsan.host_read(address_of(m), 4);  // before cudaEventSynchronize
  ASSERT_THAT(reports(), SizeIs(1));
  const auto r = reports().front();
  EXPECT_FALSE(r.current.write);
  EXPECT_TRUE(r.previous.write);
  EXPECT_THAT(r.previous.context_name, HasSubstr("stream#1 (non-blocking, device 0)"));
  // The fiber's access carries the launch's host stack.
  EXPECT_FALSE(r.previous.stack.empty());
  EXPECT_NE(r.previous.stack.front(), 0u);

  tsan.clear_reports();
  d.event_sync(e);
  tsan.host_read(address_of(m), 4);
  EXPECT_THAT(reports(), IsEmpty());
}

TEST_F(TsanBridge, PollingLoopThatExitsEarly) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto m = d.alloc(64, memory_kind::managed);
  d.launch(s, {d.write(m)});
  d.query(s, false);  // cudaErrorNotReady, and the loop gives up
  tsan.host_read(address_of(m), 8);
  EXPECT_THAT(reports(), SizeIs(1));

  tsan.clear_reports();
  d.launch(s, {d.write(m)});
  d.query(s, false);
  d.query(s, true);  // polled until it answered cudaSuccess
  tsan.host_read(address_of(m), 8);
  EXPECT_THAT(reports(), IsEmpty());
}

TEST_F(TsanBridge, WrongStreamSynchronized) {
  const auto producer = d.stream(stream_flavor::non_blocking);
  const auto other = d.stream(stream_flavor::non_blocking);
  const auto p = d.alloc(64, memory_kind::pinned_host);
  d.launch(producer, {d.write(p)});
  d.sync(other);
  tsan.host_read(address_of(p), 64);
  EXPECT_THAT(reports(), SizeIs(1));

  tsan.clear_reports();
  d.launch(producer, {d.write(p)});
  d.sync(producer);
  tsan.host_read(address_of(p), 64);
  EXPECT_THAT(reports(), IsEmpty());
}

TEST_F(TsanBridge, PinnedBufferRefilledWhileAnAsyncCopyReadsIt) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto pinned = d.alloc(128, memory_kind::pinned_host);
  const auto dev = d.alloc(128, memory_kind::device);
  tsan.host_write(address_of(pinned), 128);  // filled before the copy: ordered
  d.memcpy(s, d.whole(dev), memory_kind::device, d.whole(pinned), memory_kind::pinned_host, true);
  EXPECT_THAT(reports(), IsEmpty());
  tsan.host_write(address_of(pinned), 128);  // refilled while the copy may still read it
  ASSERT_THAT(reports(), SizeIs(1));
  EXPECT_TRUE(reports().front().current.write);
  EXPECT_FALSE(reports().front().previous.write);

  tsan.clear_reports();
  d.memcpy(s, d.whole(dev), memory_kind::device, d.whole(pinned), memory_kind::pinned_host, true);
  d.sync(s);
  tsan.host_write(address_of(pinned), 128);
  EXPECT_THAT(reports(), IsEmpty());
}

TEST_F(TsanBridge, HostFunctionReadingDeviceResults) {
  const auto producer = d.stream(stream_flavor::non_blocking);
  const auto consumer = d.stream(stream_flavor::non_blocking);
  const auto p = d.alloc(64, memory_kind::pinned_host);
  const auto e = d.event();
  // Racy: the host function runs on another stream, unordered with the kernel.
  d.launch(producer, {d.write(p)});
  d.host_func(consumer, {});
  std::thread([&] {  // the driver's thread runs the body
    const tsan::host_function_body body(consumer, true);
    tsan.host_read(address_of(p), 64);
  }).join();
  ASSERT_THAT(reports(), SizeIs(1));
  EXPECT_THAT(reports().front().current.context_name, HasSubstr("host function 'host_fn'"));

  d.sync(consumer);
  tsan.clear_reports();
  d.launch(producer, {d.write(p)});
  d.record(e, producer);
  d.wait(e, consumer);
  d.host_func(consumer, {});
  std::thread([&] {
    const tsan::host_function_body body(consumer, true);
    tsan.host_read(address_of(p), 64);
  }).join();
  EXPECT_THAT(reports(), IsEmpty());
}

// ---- edges ----

TEST_F(TsanBridge, HostAccessesBeforeALaunchAreOrderedBeforeIt) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto m = d.alloc(64, memory_kind::managed);
  d.launch(s, {d.read(m)});
  d.sync(s);
  // The engine skips the second launch's join (the thread did nothing it
  // saw); TSan must still order the host's write before the kernel.
  tsan.host_write(address_of(m), 64);
  d.launch(s, {d.read(m)});
  EXPECT_THAT(reports(), IsEmpty());
  tsan.host_write(address_of(m), 64);  // while the kernel reads
  EXPECT_THAT(reports(), SizeIs(1));
}

TEST_F(TsanBridge, EventReRecordReplacesTheSnapshot) {
  const auto a = d.stream(stream_flavor::non_blocking);
  const auto b = d.stream(stream_flavor::non_blocking);
  const auto m = d.alloc(64, memory_kind::managed);
  const auto e = d.event();
  d.launch(a, {d.write(m)});
  d.record(e, a);
  d.record(e, b);  // S-EVENT-1: now stands for b's (empty) work only
  d.event_sync(e);
  tsan.host_read(address_of(m), 4);
  EXPECT_THAT(reports(), SizeIs(1));
}

TEST_F(TsanBridge, LegacyStreamAndDeviceSynchronize) {
  const auto blocking = d.stream(stream_flavor::blocking);
  const auto legacy = d.legacy();
  const auto m = d.alloc(64, memory_kind::managed);
  d.launch(blocking, {d.write(m)});
  d.launch(legacy, {});  // S-DEFAULT-1: waits for the blocking stream
  d.sync(legacy);
  tsan.host_read(address_of(m), 4);
  EXPECT_THAT(reports(), IsEmpty());

  const auto non_blocking = d.stream(stream_flavor::non_blocking);
  d.launch(non_blocking, {d.write(m)});
  d.launch(legacy, {});
  d.sync(legacy);  // S-DEFAULT-2: does not wait for it
  tsan.host_read(address_of(m), 4);
  EXPECT_THAT(reports(), SizeIs(1));

  tsan.clear_reports();
  d.device_sync();
  tsan.host_write(address_of(m), 4);
  EXPECT_THAT(reports(), IsEmpty());
}

TEST_F(TsanBridge, StreamsRaceOnHostMemoryToo) {
  const auto a = d.stream(stream_flavor::non_blocking);
  const auto b = d.stream(stream_flavor::non_blocking);
  const auto m = d.alloc(64, memory_kind::managed);
  d.launch(a, {d.write(m)});
  d.launch(b, {d.read(m)});
  EXPECT_THAT(reports(), SizeIs(1));  // the engine's stream race, seen by TSan as well
}

TEST_F(TsanBridge, DeviceMemoryIsLeftToTheEngine) {
  const auto a = d.stream(stream_flavor::non_blocking);
  const auto b = d.stream(stream_flavor::non_blocking);
  const auto dev = d.alloc(64, memory_kind::device);
  d.launch(a, {d.write(dev)});
  d.launch(b, {d.read(dev)});
  EXPECT_THAT(reports(), IsEmpty());
  EXPECT_EQ(bridge.statistics().accesses_skipped, 2u);
}

TEST_F(TsanBridge, StagedUploadReadsTheSourceOnTheHost) {
  // cudaMemcpy from pageable memory: the driver reads the source on the
  // calling thread before returning; TSan does not see the driver.
  const auto s = d.legacy();
  const auto src = d.alloc(32, memory_kind::pageable_host);
  const auto dev = d.alloc(32, memory_kind::device);
  const auto other = d.stream(stream_flavor::non_blocking);
  d.launch(other, {d.write(src)});
  d.memcpy(s, d.whole(dev), memory_kind::device, d.whole(src), memory_kind::pageable_host, false);
  ASSERT_THAT(reports(), SizeIs(1));
  EXPECT_THAT(reports().front().current.context_name, HasSubstr("thread"));
}

TEST_F(TsanBridge, GraphLaunchAccessesAreMirrored) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto m = d.alloc(16, memory_kind::managed);
  const auto g = d.graph();
  d.capture_begin(s, g);
  d.launch(s, {d.write(m)});
  d.capture_end(s, g);
  d.instantiate(g, {{"node", {d.write(m)}}}, {});
  d.launch_graph(g, s);
  tsan.host_read(address_of(m), 16);
  EXPECT_THAT(reports(), SizeIs(1));
  tsan.clear_reports();
  d.sync(s);
  tsan.host_read(address_of(m), 16);
  EXPECT_THAT(reports(), IsEmpty());
}

TEST_F(TsanBridge, DestroyedStreamStillOrdersThroughDeviceSynchronize) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto m = d.alloc(16, memory_kind::managed);
  d.launch(s, {d.write(m)});
  d.destroy(s);
  // The stream's fiber is gone; the device's floor, which the engine joins
  // a destroyed stream into (it stands in for it in device syncs), has one.
  EXPECT_EQ(tsan.live_fibers(), 1);
  d.device_sync();
  tsan.host_read(address_of(m), 16);
  EXPECT_THAT(reports(), IsEmpty());
}

TEST_F(TsanBridge, OtherHostThreadsIssueTheirOwnWork) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto m = d.alloc(16, memory_kind::managed);
  d.on_other_thread([&] {
    tsan.host_write(address_of(m), 16);
    d.launch(s, {d.read(m)});
  });
  EXPECT_THAT(reports(), IsEmpty());
  d.sync(s);
  tsan.host_write(address_of(m), 16);
  // Ordered after the kernel, and after the other thread's write through it.
  EXPECT_THAT(reports(), IsEmpty());
}

// ---- host functions (Note [Host functions are real host code]) ----

TEST_F(TsanBridge, WorkAfterAHostFunctionWaitsForItsBody) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto p = d.alloc(64, memory_kind::pinned_host);
  d.launch(s, {d.write(p)});
  d.host_func(s, {});
  // Enqueued before the body runs, but after it in the stream: deferred.
  d.launch(s, {d.write(p)});
  EXPECT_GT(bridge.statistics().operations_deferred, 0u);
  std::thread([&] {
    const tsan::host_function_body body(s, true);
    tsan.host_read(address_of(p), 64);  // after the first kernel, before the second
  }).join();
  EXPECT_THAT(reports(), IsEmpty());
  // The deferred kernel was replayed at the body's end: a host read now
  // races with it.
  tsan.host_read(address_of(p), 64);
  EXPECT_THAT(reports(), SizeIs(1));
  tsan.clear_reports();
  d.sync(s);
  tsan.host_read(address_of(p), 64);
  EXPECT_THAT(reports(), IsEmpty());
}

TEST_F(TsanBridge, DeferredWorkKeepsTheHostClockOfItsEnqueue) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto p = d.alloc(64, memory_kind::pinned_host);
  d.host_func(s, {});
  d.launch(s, {d.read(p)});      // deferred behind the host function
  tsan.host_write(address_of(p), 64);  // after that enqueue: races with the kernel
  std::thread([&] { const tsan::host_function_body body(s, true); }).join();
  EXPECT_THAT(reports(), SizeIs(1));
}

TEST_F(TsanBridge, AcquiringFromADeferredStreamDefersToo) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto t = d.stream(stream_flavor::non_blocking);
  const auto p = d.alloc(64, memory_kind::pinned_host);
  const auto e = d.event();
  d.host_func(s, {});
  d.record(e, s);  // after the host function
  d.wait(e, t);
  d.launch(t, {d.write(p)});  // ordered after the body
  std::thread([&] {
    const tsan::host_function_body body(s, true);
    tsan.host_write(address_of(p), 64);
  }).join();
  EXPECT_THAT(reports(), IsEmpty());
}

TEST_F(TsanBridge, HostSynchronizingWithDeferredWorkGivesTheHostFunctionUp) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto p = d.alloc(64, memory_kind::pinned_host);
  d.host_func(s, {});
  d.launch(s, {d.write(p)});
  d.sync(s);  // the body never ran (it could not on a GPU): given up
  EXPECT_EQ(bridge.statistics().host_functions_unchecked, 1u);
  tsan.host_read(address_of(p), 64);
  EXPECT_THAT(reports(), IsEmpty());
  // Should it run after all, its body is not checked.
  std::thread([&] {
    const tsan::host_function_body body(s, true);
    tsan.host_write(address_of(p), 64);
  }).join();
  EXPECT_THAT(reports(), IsEmpty());
}

TEST_F(TsanBridge, UnannouncedHostFunctionsRunUnchecked) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto p = d.alloc(64, memory_kind::pinned_host);
  d.launch(s, {d.write(p)});
  std::thread([&] {
    const tsan::host_function_body body(s, false);  // a graph's host node
    tsan.host_read(address_of(p), 64);
  }).join();
  EXPECT_THAT(reports(), IsEmpty());
  EXPECT_EQ(bridge.statistics().host_functions_unchecked, 1u);
}

TEST_F(TsanBridge, HostFunctionBodyShowsTheLaunchStack) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto p = d.alloc(64, memory_kind::pinned_host);
  const auto other = d.stream(stream_flavor::non_blocking);
  d.launch(other, {d.write(p)});
  d.host_func(s, {});
  std::thread([&] {
    const tsan::host_function_body body(s, true);
    tsan.host_read(address_of(p), 64, 0x1234);
  }).join();
  const auto found = reports();
  ASSERT_THAT(found, SizeIs(1));
  const auto& stack = found.front().current.stack;
  ASSERT_GE(stack.size(), 2u);
  EXPECT_EQ(stack.front(), 0x1234u);  // the body's own pc, then the launch site
}

TEST_F(TsanBridge, FibersAreDestroyedWithTheBridge) {
  {
    const auto s = d.stream(stream_flavor::non_blocking);
    d.launch(s, {});
    EXPECT_EQ(tsan.live_fibers(), 1);
  }
  d.eng().set_order_observer(nullptr);
  bridge.~tsan_bridge();
  EXPECT_EQ(tsan.live_fibers(), 0);
  new (&bridge) tsan::tsan_bridge(model_tsan::api(), d.eng().tables());
}

// ---- the active bridge ----

TEST_F(TsanBridge, SimulatedDeviceWorkIsIgnored) {
  const auto m = d.alloc(16, memory_kind::managed);
  const auto s = d.stream(stream_flavor::non_blocking);
  d.launch(s, {d.read(m)});
  {
    const tsan::simulated_device_scope sim;
    tsan.host_write(address_of(m), 16);  // the sim running some kernel
  }
  EXPECT_THAT(reports(), IsEmpty());
  EXPECT_EQ(tsan::active_bridge(), &bridge);
}

}  // namespace
}  // namespace streamsan::testing
namespace streamsan::testing {
void PrintTo(const model_report& r, std::ostream* os) {
  const auto side = [&](const model_access& a) {
    *os << (a.write ? "write" : "read") << " [" << std::hex << a.begin << "," << a.end << std::dec
        << ") by " << a.context_name << " (context " << a.context << " at " << a.epoch << ") stack";
    for (const auto f : a.stack) *os << ' ' << std::hex << f << std::dec;
  };
  *os << "\n  ";
  side(r.current);
  *os << "\n  after ";
  side(r.previous);
}
}  // namespace streamsan::testing
