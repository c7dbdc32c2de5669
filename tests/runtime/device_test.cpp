#include <gtest/gtest.h>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

using testing::expect_error;

class Device : public testing::runtime_test {};

TEST_F(Device, CountMatchesTheBackend) {
  EXPECT_EQ(device_count(), current_backend().device_count());
  if (testing::on_sim()) EXPECT_EQ(device_count(), current_options().sim.device_count);
}

TEST_F(Device, PropertiesDescribeEachDevice) {
  for (int d = 0; d < device_count(); ++d) {
    const auto p = get_device_properties(d);
    EXPECT_FALSE(p.name.empty());
    EXPECT_EQ(get_device_name(d), p.name);
    EXPECT_EQ(get_device_capability(d), std::make_pair(p.major, p.minor));
    EXPECT_GT(p.total_memory, 0u);
  }
}

TEST_F(Device, MemGetInfoSeesAllocations) {
  STREAMSAN_REQUIRE_SIM();  // a real GPU has other tenants
  const auto before = mem_get_info();
  EXPECT_EQ(before.total, get_device_properties().total_memory);
  auto a = allocate_device(1 << 20);
  EXPECT_EQ(mem_get_info().free, before.free - (1u << 20));
  a.free();
  EXPECT_EQ(mem_get_info().free, before.free);
}

TEST_F(Device, PeerAccessIsBetweenDistinctDevices) {
  STREAMSAN_REQUIRE_DEVICES(2);
  EXPECT_FALSE(can_device_access_peer(0, 0));
  if (testing::on_sim()) EXPECT_TRUE(can_device_access_peer(0, 1));
}

TEST_F(Device, InvalidDeviceIndexThrows) {
  const auto n = device_count();
  expect_error<usage_error>([&] { set_device(n); },
                            "set_device(" + std::to_string(n) + "): device " + std::to_string(n) +
                                " does not exist (" + std::to_string(n) + " visible)");
}

TEST_F(Device, CurrentDeviceIsPerThread) {
  STREAMSAN_REQUIRE_DEVICES(2);
  set_device(1);
  int seen = -1;
  std::thread([&] { seen = current_device(); }).join();
  EXPECT_EQ(seen, 0);
  EXPECT_EQ(current_device(), 1);
}

TEST_F(Device, SynchronizeWaitsForEveryStreamOfTheDevice) {
  initialize(testing::test_options(1, 0));
  stream a;
  stream b({.non_blocking = false});
  launch(a, kernels::spin{std::chrono::microseconds(5)});
  launch(b, kernels::spin{std::chrono::microseconds(5)});
  launch(legacy_default_stream(), kernels::spin{std::chrono::microseconds(5)});
  synchronize();  // S-SYNC-1
  EXPECT_TRUE(a.query());
  EXPECT_TRUE(b.query());
  EXPECT_TRUE(legacy_default_stream().query());
}

TEST_F(Device, SynchronizeReachesTheLog) {
  testing::kept_log log;
  synchronize(0);
  const auto syncs = log.all<device_synchronize>();
  ASSERT_EQ(syncs.size(), 1u);
  EXPECT_EQ(syncs[0].device, 0);
}

}  // namespace
}  // namespace streamsan::rt
