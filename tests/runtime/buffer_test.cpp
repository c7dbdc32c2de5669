#include <gtest/gtest.h>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

using testing::expect_error;

class Buffer : public testing::runtime_test {};

TEST_F(Buffer, EachKindIsLoggedWithItsKindAndLabel) {
  testing::kept_log log;
  stream s;
  auto dev = allocate_device(100, -1, "weights");
  auto pinned = allocate_pinned_host(200);
  auto managed = allocate_managed(300);
  auto ordered = allocate_async(400, s);
  auto pageable = allocate_pageable_host(500);
  const auto allocs = log.all<alloc_record>();
  ASSERT_EQ(allocs.size(), 5u);
  const memory_kind kinds[] = {memory_kind::device, memory_kind::pinned_host, memory_kind::managed,
                               memory_kind::stream_ordered, memory_kind::pageable_host};
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(allocs[i].kind, kinds[i]);
    EXPECT_EQ(allocs[i].size, 100u * (i + 1));
  }
  EXPECT_EQ(log.text(allocs[0].label), "weights");
  EXPECT_EQ(allocs[0].alloc, dev.alloc());
  EXPECT_EQ(allocs[3].stream, s.id());
  EXPECT_EQ(ordered.stream(), s.ref());
}

TEST_F(Buffer, FreesAreLoggedWithTheirDocumentedBehaviour) {
  testing::kept_log log;
  stream s;
  stream other;
  auto dev = allocate_device(64);
  auto pinned = allocate_pinned_host(64);
  auto ordered = allocate_async(64, s);
  auto moved = allocate_async(64, s);
  dev.free();
  pinned.free();
  ordered.free();
  other.wait_stream(s);
  moved.free_async(other);
  const auto frees = log.all<free_record>();
  ASSERT_EQ(frees.size(), 4u);
  EXPECT_EQ(frees[0].mode, free_mode::synchronizing);  // cudaFree (S-MEM-5)
  EXPECT_EQ(frees[1].mode, free_mode::unsynchronized);
  EXPECT_EQ(frees[2].mode, free_mode::stream_ordered);
  EXPECT_EQ(frees[2].stream, s.id());
  EXPECT_EQ(frees[3].stream, other.id());
  EXPECT_TRUE(dev.empty());
}

TEST_F(Buffer, OnlyStreamOrderedMemoryIsFreedOnAStream) {
  stream s;
  auto dev = allocate_device(64);
  const auto id = dev.alloc();
  expect_error<usage_error>([&] { dev.free_async(s); },
                            "freeing " + to_string(id) +
                                ": only stream-ordered memory is freed on a stream");
}

TEST_F(Buffer, MovingTransfersOwnership) {
  auto a = allocate_device(64);
  const auto id = a.alloc();
  buffer b = std::move(a);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.alloc(), id);
  const auto view = b.release();
  EXPECT_EQ(view.alloc(), id);
  EXPECT_TRUE(b.empty());
}

TEST_F(Buffer, SubviewsAreBoundsChecked) {
  auto a = allocate_device(16);
  const auto v = a.subview(4, 8);
  EXPECT_EQ(v.offset(), 4u);
  EXPECT_EQ(v.subview(2, 2).offset(), 6u);
  EXPECT_EQ(v.elements<float>(1, 1).offset(), 8u);
  expect_error<usage_error>([&] { (void)a.subview(8, 16); },
                            "subview [8, 24) of a 16-byte view of " + to_string(a.alloc()) +
                                ": out of bounds");
}

TEST_F(Buffer, HostHelpersTouchOnlyHostAccessibleMemory) {
  auto pinned = allocate_pinned_host(4 * sizeof(float));
  auto managed = allocate_managed(4 * sizeof(float));
  auto dev = allocate_device(4 * sizeof(float));
  const std::vector<float> values{1, 2, 3, 4};
  host_write<float>(pinned, values);
  EXPECT_EQ(host_read<float>(pinned), values);
  EXPECT_EQ(host_read_at<float>(pinned, 2), 3.0f);
  host_fill<float>(managed, 1.5f);
  EXPECT_EQ(host_read_at<float>(managed, 3), 1.5f);
  expect_error<usage_error>([&] { (void)host_read<float>(dev); },
                            "host read of " + to_string(dev.alloc()) +
                                ": device memory is not host-accessible; copy it with memcpy");
}

TEST_F(Buffer, HostAccessesReachTheLog) {
  testing::kept_log log;
  auto pinned = allocate_pinned_host(8 * sizeof(float));
  host_fill<float>(pinned.elements<float>(2, 4), 0.0f);
  (void)host_read_at<float>(pinned, 7);
  const auto accesses = log.all<host_access>();
  ASSERT_EQ(accesses.size(), 2u);
  ASSERT_EQ(accesses[0].accesses.size(), 1u);
  EXPECT_EQ(accesses[0].accesses[0].range.alloc, pinned.alloc());
  EXPECT_EQ(accesses[0].accesses[0].range.offset, 8u);
  EXPECT_EQ(accesses[0].accesses[0].range.size, 16u);
  EXPECT_EQ(accesses[0].accesses[0].mode, access_mode::write);
  EXPECT_EQ(log.text(accesses[0].what), "host write");
  EXPECT_EQ(accesses[1].accesses[0].range.offset, 28u);
  EXPECT_EQ(accesses[1].accesses[0].mode, access_mode::read);
}

TEST_F(Buffer, ExhaustingDeviceMemoryThrowsOutOfMemory) {
  STREAMSAN_REQUIRE_SIM();
  auto options = testing::test_options();
  options.sim.memory_per_device = 1 << 20;
  initialize(options);
  auto most = allocate_device(768 << 10);
  try {
    auto more = allocate_device(512 << 10);
    ADD_FAILURE() << "no out-of-memory error";
  } catch (const out_of_memory_error& e) {
    EXPECT_EQ(e.code(), error_code::memory_allocation);
    EXPECT_EQ(std::string(e.what()),
              "allocate_device(524288 bytes): tried to allocate 524288 bytes on "
              "device 0 (262144 of 1048576 bytes free) (out of memory)");
  }
}

TEST_F(Buffer, OwnersOfAnEndedSessionAreInert) {
  auto a = allocate_device(64);
  stream s;
  initialize(testing::test_options());
  a.free();  // no effect on the new session, no error
  EXPECT_TRUE(a.empty());
}

}  // namespace
}  // namespace streamsan::rt
