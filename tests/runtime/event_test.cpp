#include <gtest/gtest.h>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

using testing::expect_error;

class Event : public testing::runtime_test {};

TEST_F(Event, IsCreatedOnTheDeviceOfItsFirstRecord) {
  STREAMSAN_REQUIRE_DEVICES(2);
  event e;
  EXPECT_FALSE(e.device().has_value());
  stream on_one({.device = 1});
  e.record(on_one);
  EXPECT_EQ(e.device(), 1);
}

TEST_F(Event, RecordingOnAStreamOfAnotherDeviceThrows) {
  STREAMSAN_REQUIRE_DEVICES(2);
  event e;
  stream zero({.device = 0});
  stream one({.device = 1});
  e.record(zero);
  expect_error<usage_error>([&] { e.record(one); },
                            "recording " + e.name() + " on " + one.name() +
                                ": stream belongs to device 1, event to device 0");
}

TEST_F(Event, StreamsOfAnyDeviceMayWaitOnIt) {
  STREAMSAN_REQUIRE_DEVICES(2);
  event e;
  stream zero({.device = 0});
  stream one({.device = 1});
  e.record(zero);
  one.wait_event(e);  // S-EVENT-6
  one.synchronize();
  EXPECT_TRUE(e.query());
}

TEST_F(Event, NeverRecordedIsCompleteAndOrdersNothing) {
  event e;
  EXPECT_TRUE(e.query());  // S-EVENT-4
  e.synchronize();         // S-EVENT-3: returns at once
  stream s;
  s.wait_event(e);
  EXPECT_TRUE(s.query());
}

TEST_F(Event, QueryIsFalseUntilTheCapturedWorkCompletes) {
  STREAMSAN_REQUIRE_SIM();
  initialize(testing::test_options(1, 0));
  stream s;
  event e;
  launch(s, kernels::spin{std::chrono::microseconds(5)});
  e.record(s);
  EXPECT_FALSE(e.query());
  e.synchronize();
  EXPECT_TRUE(e.query());
}

TEST_F(Event, RecordingAgainCapturesTheLaterWork) {
  STREAMSAN_REQUIRE_SIM();
  initialize(testing::test_options(1, 0));
  stream s;
  event e;
  e.record(s);
  e.synchronize();
  launch(s, kernels::spin{std::chrono::microseconds(5)});
  e.record(s);  // S-EVENT-1: overwrites
  EXPECT_FALSE(e.query());
}

TEST_F(Event, ElapsedTimeNeedsTimingOnBothEvents) {
  event start({.enable_timing = true});
  event end;
  expect_error<usage_error>([&] { start.elapsed_time(end); },
                            "elapsed_time(" + start.name() + ", " + end.name() + "): " + end.name() +
                                " was created without timing (event_options::enable_timing)");
}

TEST_F(Event, ElapsedTimeNeedsRecordedEvents) {
  event start({.enable_timing = true});
  event end({.enable_timing = true});
  stream s;
  end.record(s);
  expect_error<usage_error>([&] { start.elapsed_time(end); },
                            "elapsed_time(" + start.name() + ", " + end.name() + "): " +
                                start.name() + " was never recorded");
}

TEST_F(Event, ElapsedTimeNeedsCompletedEvents) {
  STREAMSAN_REQUIRE_SIM();
  initialize(testing::test_options(1, 0));
  event start({.enable_timing = true});
  event end({.enable_timing = true});
  stream s;
  start.record(s);
  launch(s, kernels::spin{std::chrono::milliseconds(1)});
  end.record(s);
  expect_error<usage_error>([&] { start.elapsed_time(end); },
                            "elapsed_time(" + start.name() + ", " + end.name() + "): " +
                                start.name() + " has not completed (synchronize it first)");
}

TEST_F(Event, ElapsedTimeMeasuresTheWorkBetween) {
  event start({.enable_timing = true});
  event end({.enable_timing = true});
  stream s;
  start.record(s);
  launch(s, kernels::spin{std::chrono::milliseconds(2)});
  end.record(s);
  end.synchronize();
  const float ms = start.elapsed_time(end);
  if (testing::on_sim()) {
    EXPECT_FLOAT_EQ(ms, 2.0f);  // simulated time: the spin alone
  } else {
    EXPECT_GE(ms, 1.9f);  // a real clock: the spin, give or take a tick
  }
}

TEST_F(Event, InterprocessEventsCannotTime) {
  expect_error<usage_error>(
      [] { event e({.enable_timing = true, .interprocess = true}); },
      "creating an event: an interprocess event cannot have timing enabled (CUDA requires "
      "cudaEventDisableTiming with cudaEventInterprocess)");
}

TEST_F(Event, WaitingOnADestroyedEventThrows) {
  stream s;
  event_ref dead;
  {
    event e;
    e.record(s);
    dead = e;
  }
  expect_error<usage_error>([&] { s.wait_event(dead); },
                            "waiting on " + dead.name() + " on " + s.name() + ": " + dead.name() +
                                " was destroyed");
}

TEST_F(Event, StreamRecordEventReturnsARecordedEvent) {
  stream s;
  auto e = s.record_event();
  e.synchronize();
  EXPECT_TRUE(e.query());
  EXPECT_EQ(e.device(), s.device());
}

TEST_F(Event, OperationsReachTheLog) {
  testing::kept_log log;
  stream a;
  stream b;
  event e({.enable_timing = true, .blocking = true});
  e.record(a);
  b.wait_event(e);
  e.synchronize();
  EXPECT_TRUE(e.query());
  const auto id = e.id();
  e = event{};
  const auto creates = log.all<event_create>();
  ASSERT_EQ(creates.size(), 2u);
  EXPECT_EQ(creates[0].event, id);
  EXPECT_EQ(creates[0].flags, event_flag_timing | event_flag_blocking_sync);
  const auto records = log.all<event_record>();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].event, id);
  EXPECT_EQ(records[0].stream, a.id());
  const auto waits = log.all<event_wait>();
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].stream, b.id());
  EXPECT_EQ(log.count<event_synchronize>(), 1u);
  const auto queries = log.all<event_query>();
  ASSERT_EQ(queries.size(), 1u);
  EXPECT_TRUE(queries[0].complete);
  const auto destroys = log.all<event_destroy>();
  ASSERT_EQ(destroys.size(), 1u);
  EXPECT_EQ(destroys[0].event, id);
}

}  // namespace
}  // namespace streamsan::rt
