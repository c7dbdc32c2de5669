#include <gtest/gtest.h>

#include <thread>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

using testing::expect_error;

class Stream : public testing::runtime_test {};

TEST_F(Stream, PriorityIsClampedToTheDeviceRange) {
  const auto range = stream_priority_range();
  ASSERT_LE(range.greatest, range.least);  // lower number = higher priority
  stream high({.priority = range.greatest - 10});
  stream low({.priority = range.least + 10});
  EXPECT_EQ(high.priority(), range.greatest);
  EXPECT_EQ(low.priority(), range.least);
}

TEST_F(Stream, FlagsChooseTheFlavor) {
  stream torch_like;
  stream blocking({.non_blocking = false});
  EXPECT_EQ(torch_like.flavor(), stream_flavor::non_blocking);
  EXPECT_EQ(blocking.flavor(), stream_flavor::blocking);
}

TEST_F(Stream, DefaultStreamsHaveTheirFlavors) {
  EXPECT_EQ(legacy_default_stream().flavor(), stream_flavor::legacy_default);
  EXPECT_EQ(per_thread_default_stream().flavor(), stream_flavor::per_thread_default);
  EXPECT_EQ(default_stream(), legacy_default_stream());
  EXPECT_EQ(current_stream(), legacy_default_stream());
}

TEST_F(Stream, PerThreadModeMakesThePerThreadStreamTheDefault) {
  auto options = testing::test_options();
  options.per_thread_default_stream = true;
  initialize(options);
  EXPECT_EQ(default_stream(), per_thread_default_stream());
  EXPECT_NE(default_stream(), legacy_default_stream());
}

TEST_F(Stream, PerThreadDefaultStreamsDifferBetweenThreads) {
  const auto mine = per_thread_default_stream();
  const auto legacy = legacy_default_stream();
  stream_ref theirs;
  stream_ref their_legacy;
  std::thread([&] {
    theirs = per_thread_default_stream();
    their_legacy = legacy_default_stream();
  }).join();
  EXPECT_NE(mine, theirs);
  EXPECT_EQ(legacy, their_legacy);
}

TEST_F(Stream, CurrentStreamIsPerThreadAndPerDevice) {
  STREAMSAN_REQUIRE_DEVICES(2);
  stream s;
  set_stream(s);
  EXPECT_EQ(current_stream(), s.ref());
  EXPECT_EQ(current_stream(1), default_stream(1));
  stream_ref other_thread;
  std::thread([&] { other_thread = current_stream(0); }).join();
  EXPECT_EQ(other_thread, default_stream(0));
}

TEST_F(Stream, SelectingAStreamOfAnotherDeviceSwitchesTheDevice) {
  STREAMSAN_REQUIRE_DEVICES(2);
  stream on_one({.device = 1});
  EXPECT_EQ(on_one.device(), 1);
  set_stream(on_one);  // S-STREAM-8
  EXPECT_EQ(current_device(), 1);
  EXPECT_EQ(current_stream(), on_one.ref());
}

TEST_F(Stream, QueryIsTrueOnceSynchronized) {
  initialize(testing::test_options(1, 0));
  stream s;
  EXPECT_TRUE(s.query());  // nothing submitted (S-STREAM-4)
  launch(s, kernels::spin{std::chrono::milliseconds(20)});
  if (testing::on_sim()) EXPECT_FALSE(s.query());  // nothing runs until the host waits
  s.synchronize();
  EXPECT_TRUE(s.query());
}

TEST_F(Stream, WaitEventOrdersAConsumerAfterItsProducer) {
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    initialize(testing::test_options(seed));
    auto a = allocate_device(256 * sizeof(float));
    auto total = allocate_device(sizeof(float));
    stream producer;
    stream consumer;
    launch(producer, kernels::fill{a, 2.0f});
    event done;
    done.record(producer);
    consumer.wait_event(done);
    launch(consumer, kernels::reduce_sum{a, total});
    consumer.synchronize();
    EXPECT_EQ(testing::read_back(total)[0], 512.0f) << "seed " << seed;
  }
}

TEST_F(Stream, UsingADestroyedStreamThrows) {
  stream_ref dead;
  {
    stream s;
    dead = s;
  }
  expect_error<usage_error>([&] { dead.synchronize(); },
                            dead.name() + ".synchronize(): " + dead.name() + " was destroyed");
  expect_error<usage_error>([&] { launch(dead, kernels::spin{}); },
                            "launching spin on " + dead.name() + ": " + dead.name() +
                                " was destroyed");
}

TEST_F(Stream, AnEmptyRefThrows) {
  expect_error<usage_error>([] { stream_ref{}.query(); },
                            "querying stream#0: no stream (an empty stream_ref)");
}

TEST_F(Stream, MovingTransfersOwnership) {
  stream a;
  const auto id = a.id();
  stream b(std::move(a));
  EXPECT_TRUE(a.is_none());  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(b.id(), id);
  EXPECT_TRUE(b.query());
  stream c;
  const auto c_ref = c.ref();
  c = std::move(b);  // destroys c's stream
  EXPECT_EQ(c.id(), id);
  expect_error<usage_error>([&] { c_ref.query(); },
                            "querying " + c_ref.name() + ": " + c_ref.name() + " was destroyed");
}

TEST_F(Stream, ReleaseKeepsTheStreamAlive) {
  stream_ref kept;
  {
    stream s;
    kept = s.release();
    EXPECT_TRUE(s.is_none());
  }
  launch(kept, kernels::spin{});
  kept.synchronize();
  EXPECT_TRUE(kept.query());
}

TEST_F(Stream, ExternalStreamOfAKnownHandleIsThatStream) {
  stream s;
  EXPECT_EQ(external_stream(s.native_handle()), s.ref());
}

TEST_F(Stream, ExternalStreamWrapsAForeignHandle) {
  const auto handle = current_backend().create_stream(0, true, 0);
  const auto wrapped = external_stream(handle, 0, true);
  EXPECT_EQ(wrapped.flavor(), stream_flavor::non_blocking);
  auto a = allocate_device(16 * sizeof(float));
  launch(wrapped, kernels::fill{a, 3.0f});
  wrapped.synchronize();
  EXPECT_EQ(testing::read_back(a)[15], 3.0f);
  current_backend().destroy_stream({0, handle});
}

TEST_F(Stream, RefsOfAnEndedSessionAreDead) {
  stream s;
  const auto old = s.ref();
  initialize(testing::test_options());
  expect_error<usage_error>([&] { old.query(); },
                            "querying " + old.name() + ": " + old.name() +
                                " belongs to a runtime session that has ended");
}

TEST_F(Stream, LifecycleReachesTheLog) {
  testing::kept_log log;
  stream s({.priority = -1, .non_blocking = false});
  stream t;
  t.wait_stream(s);
  t.synchronize();
  EXPECT_TRUE(t.query());
  const auto id = s.id();
  s = stream{};  // destroys the first stream
  const auto creates = log.all<stream_create>();
  ASSERT_EQ(creates.size(), 3u);
  EXPECT_EQ(creates[0].stream, id);
  EXPECT_EQ(creates[0].flavor, stream_flavor::blocking);
  EXPECT_EQ(creates[0].priority, -1);
  EXPECT_EQ(creates[1].flavor, stream_flavor::non_blocking);
  const auto waits = log.all<stream_wait_stream>();
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].waiter, t.id());
  EXPECT_EQ(waits[0].waited, id);
  const auto queries = log.all<stream_query>();
  ASSERT_EQ(queries.size(), 1u);
  EXPECT_TRUE(queries[0].complete);
  const auto destroys = log.all<stream_destroy>();
  ASSERT_EQ(destroys.size(), 1u);
  EXPECT_EQ(destroys[0].stream, id);
}

}  // namespace
}  // namespace streamsan::rt
