// The markers around host functions (inject/tsan/host_function_markers.h)
// over a fake driver that queues what is enqueued, and the model of TSan.
#include "inject/tsan/host_function_markers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <map>
#include <thread>

#include "tests/engine/engine_driver.h"
#include "tests/tsan/model_tsan.h"

namespace streamsan::injection {
namespace {

using testing::engine_driver;
using testing::model_tsan;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr std::uintptr_t stream_handle = 0x5000;

// Streams of host functions, as the driver would run them.
struct fake_driver {
  std::map<std::uintptr_t, std::deque<std::function<void()>>> queued;
  bool capturing = false;
  bool refuse = false;

  marker_driver driver() {
    return {[this](std::uintptr_t s, void (*fn)(void*), void* data) {
              if (refuse) return false;
              queued[s].push_back([fn, data] { fn(data); });
              return true;
            },
            [this](std::uintptr_t) { return capturing; }};
  }
  // The program's own host function, between the markers.
  void enqueue_program_function(std::function<void()> body) {
    queued[stream_handle].push_back(std::move(body));
  }
  // Runs everything queued, in order, on one "driver" thread.
  void run_on_driver_thread() {
    std::thread([this] {
      for (auto& [s, q] : queued) {
        while (!q.empty()) {
          auto f = std::move(q.front());
          q.pop_front();
          f();
        }
      }
    }).join();
  }
};

class HostFunctionMarkers : public ::testing::Test {
 protected:
  HostFunctionMarkers()
      : bridge(model_tsan::api(), d.eng().tables()),
        markers(bridge, fake.driver(), std::chrono::milliseconds(200)) {
    d.eng().set_order_observer(&bridge);
  }
  ~HostFunctionMarkers() override { d.eng().set_order_observer(nullptr); }
  void TearDown() override { EXPECT_THAT(tsan.violations(), IsEmpty()); }

  // cudaLaunchHostFunc as the dispatcher sees it: entry, the driver
  // enqueues the function, the model logs it, exit.
  void launch_host_function(stream_id s, std::function<void()> body, bool succeeds = true) {
    markers.entering(stream_handle);
    if (succeeds) {
      fake.enqueue_program_function(std::move(body));
      d.host_func(s, {});
      markers.logged(s);
    }
    markers.returned(succeeds);
  }

  model_tsan tsan;
  engine_driver d{true};
  fake_driver fake;
  tsan::tsan_bridge bridge;
  host_function_markers markers;
};

TEST_F(HostFunctionMarkers, TheBodyRunsOnItsOwnFiberAfterTheStreamsWork) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto p = d.alloc(64, memory_kind::pinned_host);
  const void* address = reinterpret_cast<const void*>(0x100000 * std::uint64_t{raw(p)});
  d.launch(s, {d.write(p)});
  launch_host_function(s, [&] { tsan.host_read(address, 64); });
  ASSERT_THAT(fake.queued[stream_handle], SizeIs(3));  // marker, function, marker
  fake.run_on_driver_thread();
  EXPECT_THAT(tsan.reports(), IsEmpty());
  EXPECT_EQ(markers.statistics().bracketed, 1u);
  EXPECT_EQ(bridge.statistics().host_functions, 1u);
}

TEST_F(HostFunctionMarkers, WithoutMarkersTheSameBodyWouldBeReported) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto p = d.alloc(64, memory_kind::pinned_host);
  const void* address = reinterpret_cast<const void*>(0x100000 * std::uint64_t{raw(p)});
  d.launch(s, {d.write(p)});
  fake.refuse = true;  // the driver refuses the markers
  launch_host_function(s, [&] { tsan.host_read(address, 64); });
  fake.run_on_driver_thread();
  EXPECT_THAT(tsan.reports(), SizeIs(1));
  EXPECT_EQ(markers.statistics().not_enqueued, 1u);
}

TEST_F(HostFunctionMarkers, TheMarkerWaitsForTheLog) {
  const auto s = d.stream(stream_flavor::non_blocking);
  markers.entering(stream_handle);
  // The driver runs the first marker before the call returned.
  std::thread driver([&] {
    auto marker = std::move(fake.queued[stream_handle].front());
    fake.queued[stream_handle].pop_front();
    marker();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  d.host_func(s, {});
  markers.logged(s);
  markers.returned(true);
  driver.join();
  fake.run_on_driver_thread();  // the closing marker
  EXPECT_EQ(markers.statistics().bracketed, 1u);
  EXPECT_EQ(markers.statistics().late, 0u);
}

TEST_F(HostFunctionMarkers, AFailedLaunchCancelsTheMarker) {
  const auto s = d.stream(stream_flavor::non_blocking);
  launch_host_function(s, {}, /*succeeds=*/false);
  ASSERT_THAT(fake.queued[stream_handle], SizeIs(1));  // only the first marker
  fake.run_on_driver_thread();
  EXPECT_EQ(markers.statistics().cancelled, 1u);
  EXPECT_EQ(markers.statistics().bracketed, 0u);
}

TEST_F(HostFunctionMarkers, AMarkerThatWaitsTooLongGivesUp) {
  const auto s = d.stream(stream_flavor::non_blocking);
  markers.entering(stream_handle);
  fake.run_on_driver_thread();  // no log within the limit
  EXPECT_EQ(markers.statistics().late, 1u);
  d.host_func(s, {});
  markers.logged(s);
  markers.returned(true);
  fake.run_on_driver_thread();  // the closing marker: nothing to end
  EXPECT_EQ(markers.statistics().bracketed, 0u);
}

TEST_F(HostFunctionMarkers, NothingIsEnqueuedOnACapturingStream) {
  fake.capturing = true;
  markers.entering(stream_handle);
  markers.returned(true);
  EXPECT_THAT(fake.queued[stream_handle], IsEmpty());
  EXPECT_EQ(markers.statistics().not_enqueued, 1u);
}

}  // namespace
}  // namespace streamsan::injection
