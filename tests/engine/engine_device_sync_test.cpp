// Cooperative launches on different devices may order their accesses on the
// device (Note [Kernels that synchronize on the device]): their conflicts are
// counted, not reported. Everything else about them is checked as usual.
#include <gtest/gtest.h>

#include "tests/engine/engine_driver.h"

namespace streamsan {
namespace {

using testing::engine_driver;
using testing::kind_list;
constexpr auto stream_race = diagnostic_kind::stream_race;
constexpr auto host_device_race = diagnostic_kind::host_device_race;

struct two_devices {
  engine_driver d;
  stream_id on0 = d.stream(stream_flavor::blocking, 0);
  stream_id on1 = d.stream(stream_flavor::blocking, 1);
  alloc_id x = d.alloc(1024, memory_kind::managed);
};

TEST(EngineDeviceSync, CooperativeLaunchesOnTwoDevicesAreCountedNotReported) {
  two_devices t;
  auto& d = t.d;
  d.cooperative_launch(t.on0, {d.write(t.x, 0, 512), d.read(t.x)});
  d.cooperative_launch(t.on1, {d.write(t.x, 512, 512), d.read(t.x)});
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_EQ(d.eng().statistics().device_synchronized_conflicts, 2u);  // RAW each way
}

TEST(EngineDeviceSync, CooperativeLaunchesOnOneDeviceStillRace) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking, 0);
  const auto s2 = d.stream(stream_flavor::non_blocking, 0);
  const auto x = d.alloc(64, memory_kind::managed);
  d.cooperative_launch(s1, {d.write(x)});
  d.cooperative_launch(s2, {d.write(x)});
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.eng().statistics().device_synchronized_conflicts, 0u);
}

TEST(EngineDeviceSync, APlainLaunchAgainstACooperativeOneOnAnotherDeviceStillRaces) {
  two_devices t;
  auto& d = t.d;
  d.cooperative_launch(t.on0, {d.write(t.x)});
  d.launch(t.on1, {d.read(t.x)});
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
}

TEST(EngineDeviceSync, ACopyAgainstCooperativeLaunchesStillRaces) {
  two_devices t;
  auto& d = t.d;
  const auto staging = d.alloc(1024, memory_kind::device, 1);
  d.cooperative_launch(t.on0, {d.write(t.x)});
  d.cooperative_launch(t.on1, {d.write(t.x)});
  const auto other = d.stream(stream_flavor::non_blocking, 1);
  d.memcpy(other, d.whole(staging), memory_kind::device, d.whole(t.x), memory_kind::managed,
           /*async=*/true);
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
}

TEST(EngineDeviceSync, TheHostMustStillWaitForBothDevices) {
  two_devices t;
  auto& d = t.d;
  d.cooperative_launch(t.on0, {d.write(t.x, 0, 512)});
  d.cooperative_launch(t.on1, {d.write(t.x, 512, 512)});
  d.sync(t.on1);  // device 0's half may still be written
  d.host({d.read(t.x)});
  EXPECT_EQ(d.kinds(), (kind_list{host_device_race}));
}

}  // namespace
}  // namespace streamsan
