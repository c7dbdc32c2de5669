// Events (S-EVENT-1..5), stream_wait_event (S-EVENT-2); see Note [Racing
// against a spin] in streams_test.cpp.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/cuda/backend_fixture.h"

namespace streamsan::rt::testing {
namespace {

using namespace std::chrono_literals;

TEST_F(CudaBackend, EventNeverRecordedIsComplete) {
  const event_handle e = make_event();
  EXPECT_TRUE(b().query_event(e));
  b().synchronize_event(e);
}

TEST_F(CudaBackend, QueryEventFollowsTheCapturedWork) {
  const device_stream s = make_stream();
  const event_handle e = make_event();
  spin(s, 50ms);
  b().record_event(e, s);
  EXPECT_FALSE(b().query_event(e));
  b().synchronize_event(e);
  EXPECT_TRUE(b().query_event(e));
}

TEST_F(CudaBackend, EventCapturesOnlyWorkSubmittedBeforeTheRecord) {
  const device_stream s = make_stream();
  const event_handle e = make_event();
  b().record_event(e, s);
  spin(s, 50ms);
  b().synchronize_event(e);
  EXPECT_TRUE(b().query_event(e));
  EXPECT_FALSE(b().query_stream(s));
}

TEST_F(CudaBackend, RecordingAgainOverwritesWhatTheEventCaptures) {
  const device_stream s = make_stream();
  const event_handle e = make_event();
  b().record_event(e, s);
  b().synchronize_event(e);
  spin(s, 50ms);
  b().record_event(e, s);
  EXPECT_FALSE(b().query_event(e));
}

TEST_F(CudaBackend, StreamWaitEventOrdersTheConsumerAfterTheProducer) {
  const device_stream producer = make_stream();
  const device_stream consumer = make_stream();
  const event_handle ready = make_event();
  float* x = floats(1);
  float* y = floats(1);
  produce_late(producer, x, 1.0f);
  b().record_event(ready, producer);
  b().stream_wait_event(consumer, ready);
  launch(consumer, copy_args{y, x, 1});
  b().synchronize_stream(consumer);
  EXPECT_EQ(read_one(y), 1.0f);
}

TEST_F(CudaBackend, WithoutAWaitTheConsumerRacesAhead) {
  const device_stream producer = make_stream();
  const device_stream consumer = make_stream();
  float* x = floats(1);
  float* y = floats(1);
  produce_late(producer, x, 1.0f, 200ms);
  launch(consumer, copy_args{y, x, 1});
  b().synchronize_stream(consumer);
  EXPECT_EQ(read_one(y), 0.0f);
}

TEST_F(CudaBackend, WaitingOnAnEventNeverRecordedOrdersNothing) {
  const device_stream s = make_stream();
  const event_handle never = make_event();
  b().stream_wait_event(s, never);
  float* x = floats(1);
  launch(s, fill_args{x, 1, 3.0f});
  b().synchronize_stream(s);
  EXPECT_EQ(read_one(x), 3.0f);
}

// Also checks that the spin kernel keeps the device busy for its duration.
TEST_F(CudaBackend, ElapsedTimeMeasuresTheWorkBetweenTwoEvents) {
  const device_stream s = make_stream();
  const event_handle start = make_event(event_flag_timing);
  const event_handle end = make_event(event_flag_timing | event_flag_blocking_sync);
  b().record_event(start, s);
  spin(s, 10ms);
  b().record_event(end, s);
  b().synchronize_event(end);
  const float ms = b().elapsed_time(start, end);
  EXPECT_GE(ms, 9.5f);
  EXPECT_LT(ms, 100.0f);
  EXPECT_LT(b().elapsed_time(end, start), 0.0f);
}

TEST_F(CudaBackend, EventsRecordOnTheLegacyAndPerThreadStreams) {
  const event_handle e1 = make_event();
  const event_handle e2 = make_event();
  spin(legacy(), 20ms);
  b().record_event(e1, legacy());
  spin(per_thread(), 20ms);
  b().record_event(e2, per_thread());
  b().synchronize_event(e2);
  EXPECT_TRUE(b().query_event(e1));
}

}  // namespace
}  // namespace streamsan::rt::testing
