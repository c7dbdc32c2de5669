// Event misuse: destroyed, re-created, re-recorded, never recorded, wrong
// device (S-EVENT-1..6, S-STREAM-9).
#include <gtest/gtest.h>

#include "tests/engine/engine_driver.h"

namespace streamsan {
namespace engine_events_test {  // Note [Unity test programs in the sanitizer passes]
namespace {

using testing::engine_driver;
using testing::kind_list;
constexpr auto stream_race = diagnostic_kind::stream_race;

TEST(EngineEvents, WaitOnDestroyedEventReportsItAndOrdersNothing) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256);
  const auto e = d.event();
  d.launch(s1, {d.write(x)});
  d.record(e, s1);
  d.destroy(e);
  d.wait(e, s2);
  d.launch(s2, {d.read(x)});
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::destroyed_event_use, stream_race}));
  EXPECT_EQ(d.diagnostics()[0].event, e);
  EXPECT_EQ(d.diagnostics()[0].current.op, operation_kind::event_wait);
}

TEST(EngineEvents, WaitOnReCreatedEventIsUnrecordedAndOrdersNothing) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256);
  const auto e = d.event();
  d.launch(s1, {d.write(x)});
  d.record(e, s1);
  d.destroy(e);
  const auto again = d.event();  // a new id, even if the driver reuses the handle
  d.wait(again, s2);
  d.launch(s2, {d.read(x)});
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::unrecorded_event, stream_race}));
  EXPECT_EQ(d.diagnostics()[0].event, again);
}

TEST(EngineEvents, WaitOnNeverRecordedEventReportsItAndTheRace) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256);
  const auto e = d.event();
  d.launch(s1, {d.write(x)});
  d.wait(e, s2);
  d.launch(s2, {d.read(x)});
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::unrecorded_event, stream_race}));
  EXPECT_EQ(d.diagnostics()[0].event, e);
  EXPECT_EQ(d.diagnostics()[0].stream, s2);
  EXPECT_FALSE(d.diagnostics()[0].previous.has_value());
}

TEST(EngineEvents, SynchronizeOfNeverRecordedEventIsReported) {
  engine_driver d;
  const auto e = d.event();
  d.event_sync(e);
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::unrecorded_event}));
  EXPECT_EQ(d.diagnostics()[0].current.op, operation_kind::event_synchronize);
  EXPECT_EQ(d.diagnostics()[0].event, e);
}

// Note [Queries of unrecorded events]: the query answers true and is not
// misuse on its own.
TEST(EngineEvents, QueryOfNeverRecordedEventIsNotReported) {
  engine_driver d;
  const auto e = d.event();
  d.event_query(e, true);
  d.event_query(e, false);
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineEvents, QueryOfNeverRecordedEventOrdersNothing) {
  engine_driver d;
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto pinned = d.alloc(256, memory_kind::pinned_host);
  const auto e = d.event();
  d.launch(s, {d.write(pinned)});
  d.event_query(e, true);
  d.host({d.read(pinned)});
  // The race the query did not prevent is the report, not the query.
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::host_device_race}));
  EXPECT_EQ(d.diagnostics()[0].previous->op, operation_kind::kernel);
}

TEST(EngineEvents, QueryOfRecordedEventThenNeverRecordedOneStillOrders) {
  engine_driver d;
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto pinned = d.alloc(256, memory_kind::pinned_host);
  const auto done = d.event(), unused = d.event();
  d.launch(s, {d.write(pinned)});
  d.record(done, s);
  d.event_query(unused, true);
  d.event_query(done, true);
  d.host({d.read(pinned)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineEvents, QueryOfDestroyedEventIsStillReported) {
  engine_driver d;
  const auto e = d.event();
  d.destroy(e);
  d.event_query(e, true);
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::destroyed_event_use}));
  EXPECT_EQ(d.diagnostics()[0].current.op, operation_kind::event_query);
}

TEST(EngineEvents, ReRecordingOnAnotherStreamReplacesTheSnapshot) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream(), s3 = d.stream();
  const auto x = d.alloc(256);
  const auto e = d.event();
  d.launch(s1, {d.write(x)});
  d.record(e, s1);
  d.record(e, s3);  // S-EVENT-1: the wait now sees s3's work only
  d.wait(e, s2);
  d.launch(s2, {d.read(x)});
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.diagnostics()[0].previous->stream, s1);
}

TEST(EngineEvents, ReRecordingOnTheSameStreamCoversNewWork) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256);
  const auto e = d.event();
  d.record(e, s1);
  d.launch(s1, {d.write(x)});
  d.record(e, s1);
  d.wait(e, s2);
  d.launch(s2, {d.read(x)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineEvents, UseAfterDestroyIsReportedForEveryKindOfUse) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto e = d.event();
  d.record(e, s1);
  d.destroy(e);
  d.record(e, s1);
  d.event_sync(e);
  d.event_query(e, true);
  d.destroy(e);
  EXPECT_EQ(d.kinds(), (kind_list{diagnostic_kind::destroyed_event_use,
                                  diagnostic_kind::destroyed_event_use,
                                  diagnostic_kind::destroyed_event_use,
                                  diagnostic_kind::destroyed_event_use}));
}

TEST(EngineEvents, RecordingOnAnotherDevicesStreamIsAMismatchAndDoesNotRecord) {
  engine_driver d;
  const auto s0 = d.stream(stream_flavor::blocking, 0);
  const auto s1 = d.stream(stream_flavor::blocking, 1);
  const auto waiter = d.stream(stream_flavor::blocking, 0);
  const auto x = d.alloc(256);
  const auto e = d.event();
  d.record(e, s0);
  d.launch(s1, {d.write(x)});
  d.record(e, s1);  // S-EVENT-6: fails
  d.wait(e, waiter);
  d.launch(waiter, {d.read(x)});
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::event_device_mismatch, stream_race}));
  EXPECT_EQ(d.diagnostics()[0].event, e);
  EXPECT_EQ(d.diagnostics()[0].stream, s1);
}

TEST(EngineEvents, StreamsOfAnyDeviceMayWait) {
  engine_driver d;
  const auto s0 = d.stream(stream_flavor::blocking, 0);
  const auto s1 = d.stream(stream_flavor::blocking, 1);
  const auto x = d.alloc(256);
  const auto e = d.event();
  d.launch(s0, {d.write(x)});
  d.record(e, s0);
  d.wait(e, s1);
  d.launch(s1, {d.read(x)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineEvents, DestroyedStreamUseIsReportedButItsWorkStillCounts) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256, memory_kind::managed);
  d.launch(s1, {d.write(x)});
  d.destroy(s1);  // S-STREAM-9: fine with pending work
  d.launch(s2, {d.read(x)});
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
  d.device_sync();  // still waits for the destroyed stream's work
  d.host({d.write(x)});
  d.sync(s1);
  EXPECT_EQ(d.kinds(), (kind_list{stream_race, diagnostic_kind::destroyed_stream_use}));
  EXPECT_EQ(d.diagnostics()[1].stream, s1);
  EXPECT_EQ(d.diagnostics()[1].current.op, operation_kind::stream_synchronize);
}

TEST(EngineEvents, RecordOnDestroyedStreamCapturesNothing) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256);
  const auto e = d.event();
  d.launch(s1, {d.write(x)});
  d.destroy(s1);
  d.record(e, s1);
  d.wait(e, s2);
  d.launch(s2, {d.read(x)});
  EXPECT_EQ(d.kinds(), (kind_list{diagnostic_kind::destroyed_stream_use,
                                  diagnostic_kind::unrecorded_event, stream_race}));
}

}  // namespace
}  // namespace engine_events_test
}  // namespace streamsan
