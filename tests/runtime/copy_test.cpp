// Copies and memsets: values on every backend, and on the sim the documented
// host synchronization (S-COPY-1..4). With progress_per_mille 0 the sim runs
// nothing until the host waits, so whether a call waited is observable as
// whether the default stream's work has completed when it returns.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

using testing::expect_error;

constexpr std::uint64_t n = 64;
constexpr std::uint64_t bytes = n * sizeof(float);

class Copy : public testing::runtime_test {};

// Sim with no progress at API calls.
class CopySync : public ::testing::Test {
 protected:
  void SetUp() override {
    initialize(testing::test_options(1, 0));
    if (!testing::on_sim()) GTEST_SKIP() << "needs the sim backend";
  }
  void TearDown() override { shutdown(); }
  static bool default_stream_idle() { return default_stream().query(); }
};

TEST_F(Copy, RoundTripsThroughEveryMemoryKind) {
  auto pinned = allocate_pinned_host(bytes);
  auto pageable = allocate_pageable_host(bytes);
  auto dev = allocate_device(bytes);
  auto managed = allocate_managed(bytes);
  host_fill<float>(pinned, 4.0f);
  memcpy(dev, pinned);
  memcpy(managed, dev);
  memcpy(pageable, managed);
  EXPECT_EQ(host_read<float>(pageable), std::vector<float>(n, 4.0f));
}

TEST_F(Copy, AsyncCopiesAreOrderedInTheirStream) {
  stream s;
  auto pinned = allocate_pinned_host(bytes);
  auto back = allocate_pinned_host(bytes);
  auto dev = allocate_device(bytes);
  host_fill<float>(pinned, 7.0f);
  memcpy_async(dev, pinned, s);
  launch(s, kernels::scale{dev, 2.0f});
  memcpy_async(back, dev, s);
  s.synchronize();
  EXPECT_EQ(host_read<float>(back), std::vector<float>(n, 14.0f));
}

TEST_F(Copy, MemsetSetsBytes) {
  auto dev = allocate_device(bytes);
  memset(dev, 0);
  memset(dev.subview(0, 4), 0xff);
  const auto values = testing::read_back(dev);
  EXPECT_TRUE(std::isnan(values[0]));
  EXPECT_EQ(values[1], 0.0f);
}

TEST_F(Copy, SizesMustMatch) {
  auto a = allocate_device(bytes);
  auto b = allocate_device(bytes / 2);
  expect_error<usage_error>([&] { memcpy(a, b); },
                            "memcpy " + to_string(b.alloc()) + " (device) -> " + to_string(a.alloc()) +
                                " (device): sizes differ (128 -> 256 bytes)");
}

TEST_F(CopySync, DeviceToHostWaitsForTheCopy) {
  auto dev = allocate_device(bytes);
  auto host = allocate_pinned_host(bytes);
  launch(default_stream(), kernels::fill{dev, 5.0f});
  memcpy(host, dev);
  EXPECT_TRUE(default_stream_idle());
  EXPECT_EQ(host_read<float>(host), std::vector<float>(n, 5.0f));
}

TEST_F(CopySync, PinnedHostToDeviceCompletes) {
  auto dev = allocate_device(bytes);
  auto host = allocate_pinned_host(bytes);
  memcpy(dev, host);
  EXPECT_TRUE(default_stream_idle());
}

TEST_F(CopySync, PageableHostToDeviceStagesTheSourceAndReturns) {
  auto dev = allocate_device(bytes);
  auto host = allocate_pageable_host(bytes);
  host_fill<float>(host, 1.0f);
  memcpy(dev, host);
  EXPECT_FALSE(default_stream_idle());  // the DMA may still run
  host_fill<float>(host, 9.0f);         // the staged copy is unaffected
  EXPECT_EQ(testing::read_back(dev), std::vector<float>(n, 1.0f));
}

TEST_F(CopySync, DeviceToDeviceDoesNotWait) {
  auto a = allocate_device(bytes);
  auto b = allocate_device(bytes);
  memcpy(b, a);
  EXPECT_FALSE(default_stream_idle());
}

TEST_F(CopySync, HostToHostIsSynchronous) {
  auto a = allocate_pinned_host(bytes);
  auto b = allocate_pageable_host(bytes);
  host_fill<float>(a, 3.0f);
  memcpy(b, a);
  EXPECT_TRUE(default_stream_idle());
  EXPECT_EQ(host_read<float>(b), std::vector<float>(n, 3.0f));
}

TEST_F(CopySync, AsyncFromPinnedHostReadsTheSourceWhenItRuns) {
  stream s;
  auto dev = allocate_device(bytes);
  auto host = allocate_pinned_host(bytes);
  host_fill<float>(host, 1.0f);
  memcpy_async(dev, host, s);     // returns before the copy ran
  host_fill<float>(host, 6.0f);  // S-COPY-2: the host must not touch it yet
  s.synchronize();
  EXPECT_EQ(testing::read_back(dev), std::vector<float>(n, 6.0f));
}

TEST_F(CopySync, AsyncWithPageableMemoryIsAsynchronousOnTheSim) {
  stream s;
  auto dev = allocate_device(bytes);
  auto host = allocate_pageable_host(bytes);
  memcpy_async(host, dev, s);
  EXPECT_FALSE(s.query());  // CUDA *might* synchronize; the sim never does
}

TEST_F(CopySync, AsyncHostToHostIsSynchronous) {
  stream s;
  auto a = allocate_pinned_host(bytes);
  auto b = allocate_pinned_host(bytes);
  memcpy_async(b, a, s);
  EXPECT_TRUE(s.query());
}

TEST_F(CopySync, AsyncHostToHostRunsAfterItsStreamsPriorWork) {
  stream s;
  auto a = allocate_pinned_host(bytes);
  auto b = allocate_pageable_host(bytes);
  launch(s, kernels::fill{a, 8.0f});
  memcpy_async(b, a, s);
  EXPECT_EQ(host_read<float>(b), std::vector<float>(n, 8.0f));
}

// S-COPY-1 with S-DEFAULT-1: the legacy stream's copy waits for the prior
// work of blocking streams.
TEST_F(CopySync, HostToHostOnTheLegacyStreamWaitsForBlockingStreams) {
  stream blocking({.non_blocking = false});
  auto a = allocate_pinned_host(bytes);
  auto b = allocate_pageable_host(bytes);
  launch(blocking, kernels::spin{std::chrono::microseconds(1)});
  memcpy(b, a);
  EXPECT_TRUE(blocking.query());
}

// S-COPY-1: the pageable upload synchronizes the default stream only.
TEST_F(CopySync, PageableHostToDeviceSynchronizesOnlyTheDefaultStream) {
  stream blocking({.non_blocking = false});
  auto dev = allocate_device(bytes);
  auto host = allocate_pageable_host(bytes);
  launch(default_stream(), kernels::spin{std::chrono::microseconds(1)});
  launch(blocking, kernels::spin{std::chrono::microseconds(1)});
  memcpy(dev, host);
  EXPECT_FALSE(blocking.query());
  default_stream().synchronize();
}

TEST_F(CopySync, MemsetWaitsOnlyForPinnedHostAndManagedMemory) {
  auto dev = allocate_device(bytes);
  auto pinned = allocate_pinned_host(bytes);
  auto managed = allocate_managed(bytes);
  memset(dev, 0);
  EXPECT_FALSE(default_stream_idle());
  default_stream().synchronize();
  memset(pinned, 0);  // S-COPY-4
  EXPECT_TRUE(default_stream_idle());
  launch(default_stream(), kernels::spin{std::chrono::microseconds(1)});
  memset(managed, 0);  // S-COPY-4: a Unified Memory region too
  EXPECT_TRUE(default_stream_idle());
  stream s;
  memset_async(pinned, 0, s);
  EXPECT_FALSE(s.query());
  memset_async(managed, 0, s);
  s.synchronize();
}

TEST_F(Copy, ManagedMemsetIsDoneWhenItReturns) {
  auto managed = allocate_managed(bytes);
  host_fill<float>(managed, 3.0f);
  launch(default_stream(), kernels::spin{std::chrono::milliseconds(1)});
  memset(managed, 0);
  EXPECT_EQ(host_read<float>(managed), std::vector<float>(n, 0.0f));
}

TEST_F(Copy, CopiesReachTheLogWithTheirMemoryKinds) {
  testing::kept_log log;
  stream s;
  auto dev = allocate_device(bytes);
  auto pinned = allocate_pinned_host(bytes);
  memcpy(dev, pinned);
  memcpy_async(pinned.subview(0, 64), dev.subview(16, 64), s);
  memset_async(dev, 1, s);
  s.synchronize();
  const auto copies = log.all<memcpy_record>();
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0].stream, legacy_default_stream().id());
  EXPECT_FALSE(copies[0].async);
  EXPECT_EQ(copies[0].src_kind, memory_kind::pinned_host);
  EXPECT_EQ(copies[0].dst_kind, memory_kind::device);
  EXPECT_EQ(copies[0].dst.alloc, dev.alloc());
  EXPECT_EQ(copies[0].dst.size, bytes);
  EXPECT_EQ(copies[1].stream, s.id());
  EXPECT_TRUE(copies[1].async);
  EXPECT_EQ(copies[1].src.alloc, dev.alloc());
  EXPECT_EQ(copies[1].src.offset, 16u);
  EXPECT_EQ(copies[1].src.size, 64u);
  const auto sets = log.all<memset_record>();
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_TRUE(sets[0].async);
  EXPECT_EQ(sets[0].dst_kind, memory_kind::device);
}

}  // namespace
}  // namespace streamsan::rt
