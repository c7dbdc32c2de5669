#include <gtest/gtest.h>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

class Guard : public testing::runtime_test {};

TEST_F(Guard, DeviceGuardRestoresThePreviousDevice) {
  STREAMSAN_REQUIRE_DEVICES(2);
  EXPECT_EQ(current_device(), 0);
  {
    device_guard g(1);
    EXPECT_EQ(current_device(), 1);
    EXPECT_EQ(g.previous(), 0);
    stream s;  // streams without a device go to the current one (S-DEV-1)
    EXPECT_EQ(s.device(), 1);
  }
  EXPECT_EQ(current_device(), 0);
}

TEST_F(Guard, NegativeDeviceIsANoOp) {
  STREAMSAN_REQUIRE_DEVICES(2);
  set_device(1);
  {
    device_guard g(-1);
    EXPECT_EQ(current_device(), 1);
    EXPECT_EQ(g.previous(), -1);
    set_device(0);
  }
  EXPECT_EQ(current_device(), 0);  // nothing to restore
}

TEST_F(Guard, NestedDeviceGuardsUnwindInOrder) {
  STREAMSAN_REQUIRE_DEVICES(2);
  {
    device_guard outer(1);
    {
      device_guard inner(0);
      EXPECT_EQ(current_device(), 0);
    }
    EXPECT_EQ(current_device(), 1);
  }
  EXPECT_EQ(current_device(), 0);
}

TEST_F(Guard, StreamGuardSwitchesDeviceAndStreamAndRestoresBoth) {
  STREAMSAN_REQUIRE_DEVICES(2);
  stream zero_side({.device = 0});
  set_stream(zero_side);
  stream one({.device = 1});
  {
    stream_guard g(one);  // S-STREAM-8
    EXPECT_EQ(current_device(), 1);
    EXPECT_EQ(current_stream(), one.ref());
    EXPECT_EQ(current_stream(0), zero_side.ref());
  }
  EXPECT_EQ(current_device(), 0);
  EXPECT_EQ(current_stream(0), zero_side.ref());
  EXPECT_EQ(current_stream(1), default_stream(1));
}

TEST_F(Guard, StreamGuardOnTheCurrentDeviceRestoresTheStream) {
  stream a;
  stream b;
  set_stream(a);
  {
    stream_guard g(b);
    EXPECT_EQ(current_stream(), b.ref());
  }
  EXPECT_EQ(current_stream(), a.ref());
}

}  // namespace
}  // namespace streamsan::rt
