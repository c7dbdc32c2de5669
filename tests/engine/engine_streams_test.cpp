// Ordering between streams: events, waits, default streams, host
// synchronization.
#include <gtest/gtest.h>

#include "tests/engine/engine_driver.h"

namespace streamsan {
namespace {

using testing::engine_driver;
using testing::kind_list;
constexpr auto stream_race = diagnostic_kind::stream_race;
constexpr auto host_device_race = diagnostic_kind::host_device_race;

TEST(EngineStreams, TwoStreamsOnlyReadingAreClean) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256);
  d.launch(s1, {d.read(x)});
  d.launch(s2, {d.read(x)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineStreams, ReadThenUnorderedWriteOnAnotherStreamRaces) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256);
  d.launch(s1, {d.read(x)}, "reader");
  d.launch(s2, {d.write(x)}, "writer");
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(r.hazard_kind, hazard::write_after_read);
  EXPECT_EQ(r.current.stream, s2);
  EXPECT_EQ(r.current.mode, access_mode::write);
  ASSERT_TRUE(r.previous.has_value());
  EXPECT_EQ(r.previous->stream, s1);
  EXPECT_EQ(r.previous->context, context_kind::stream);
  EXPECT_EQ(r.previous->op, operation_kind::kernel);
  EXPECT_EQ(d.eng().tables().string(r.previous->name), "reader");
  EXPECT_EQ(d.eng().tables().string(r.current.name), "writer");
  ASSERT_TRUE(r.allocation.has_value());
  EXPECT_EQ(r.allocation->id, x);
  EXPECT_EQ(r.overlap_offset, 0u);
  EXPECT_EQ(r.overlap_size, 256u);
}

TEST(EngineStreams, SameStreamIsOrdered) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(256);
  d.launch(s1, {d.write(x)});
  d.launch(s1, {d.read(x)});
  d.launch(s1, {d.write(x)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineStreams, RecordThenWaitOrdersTheStreams) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256);
  const auto e = d.event();
  d.launch(s1, {d.write(x)});
  d.record(e, s1);
  d.wait(e, s2);
  d.launch(s2, {d.read(x)});
  d.launch(s2, {d.write(x)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineStreams, OneWaitingReaderIsCleanButAnUnsynchronizedReaderRaces) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream(), s3 = d.stream();
  const auto x = d.alloc(256);
  const auto e = d.event();
  d.launch(s1, {d.write(x)});
  d.record(e, s1);
  d.wait(e, s2);
  d.launch(s2, {d.read(x)});
  d.launch(s3, {d.read(x)});
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.diagnostics()[0].hazard_kind, hazard::read_after_write);
  EXPECT_EQ(d.diagnostics()[0].current.stream, s3);
  EXPECT_EQ(d.diagnostics()[0].previous->stream, s1);
}

TEST(EngineStreams, TwoReadersOfOneEventThenOneWritesRacesWithTheOther) {
  engine_driver d;
  const auto s0 = d.stream(), s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256);
  const auto e = d.event();
  d.launch(s0, {d.write(x)});
  d.record(e, s0);
  d.wait(e, s1);
  d.wait(e, s2);
  d.launch(s1, {d.read(x)});
  d.launch(s2, {d.read(x)});
  d.launch(s1, {d.write(x)});
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.diagnostics()[0].hazard_kind, hazard::write_after_read);
  EXPECT_EQ(d.diagnostics()[0].current.stream, s1);
  EXPECT_EQ(d.diagnostics()[0].previous->stream, s2);
}

TEST(EngineStreams, OneEventWaitedOnByTwoStreamsIsClean) {
  engine_driver d;
  const auto s0 = d.stream(), s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256), y = d.alloc(256);
  const auto e = d.event();
  d.launch(s0, {d.write(x), d.write(y)});
  d.record(e, s0);
  d.wait(e, s1);
  d.wait(e, s2);
  d.launch(s1, {d.read(x), d.write(x)});
  d.launch(s2, {d.read(y), d.write(y)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineStreams, TenStreamRecordWaitChainIsClean) {
  engine_driver d;
  std::vector<stream_id> s;
  for (int i = 0; i < 10; ++i) s.push_back(d.stream());
  const auto x = d.alloc(256);
  d.launch(s[0], {d.write(x)});
  for (int i = 0; i + 1 < 10; ++i) {
    const auto e = d.event();
    d.record(e, s[i]);
    d.wait(e, s[i + 1]);
    d.launch(s[i + 1], {d.read(x)});
  }
  d.launch(s[9], {d.write(x)});  // after every reader through the chain
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineStreams, WorkEnqueuedAfterTheRecordIsNotCovered) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256);
  const auto e = d.event();
  d.record(e, s1);
  d.launch(s1, {d.write(x)});
  d.wait(e, s2);
  d.launch(s2, {d.read(x)});
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.diagnostics()[0].hazard_kind, hazard::read_after_write);
}

TEST(EngineStreams, WaitStreamCoversOnlyWorkAlreadyEnqueued) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256), y = d.alloc(256);
  d.launch(s1, {d.write(x)});
  d.wait_stream(s2, s1);  // S-STREAM-6
  d.launch(s1, {d.write(y)});
  d.launch(s2, {d.read(x)});
  d.launch(s2, {d.read(y)});
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.diagnostics()[0].allocation->id, y);
}

TEST(EngineStreams, TenRacingBuffersGiveTenDiagnostics) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  std::vector<alloc_id> buffers;
  for (int i = 0; i < 10; ++i) buffers.push_back(d.alloc(64));
  for (const auto b : buffers) d.launch(s1, {d.write(b)});
  for (const auto b : buffers) d.launch(s2, {d.write(b)});
  ASSERT_EQ(d.diagnostics().size(), 10u);
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(d.diagnostics()[i].kind, stream_race);
    EXPECT_EQ(d.diagnostics()[i].hazard_kind, hazard::write_after_write);
    EXPECT_EQ(d.diagnostics()[i].allocation->id, buffers[i]);
    EXPECT_EQ(d.diagnostics()[i].count, 1u);
  }
}

TEST(EngineStreams, HostFunctionAccessesAreStreamAccesses) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256, memory_kind::pinned_host);
  d.host_func(s1, {d.write(x)});
  d.launch(s2, {d.read(x)});
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.diagnostics()[0].previous->op, operation_kind::host_func);
  EXPECT_EQ(d.diagnostics()[0].previous->context, context_kind::stream);
}

// ---- default streams (S-DEFAULT-1/2/3) ----

TEST(EngineDefaultStreams, LegacyStreamSynchronizesWithBlockingStreams) {
  engine_driver d;
  const auto legacy = d.legacy();
  const auto blocking = d.stream(stream_flavor::blocking);
  const auto x = d.alloc(256), y = d.alloc(256);
  d.launch(blocking, {d.write(x)});
  d.launch(legacy, {d.read(x)});  // waits for prior blocking-stream work
  d.launch(legacy, {d.write(y)});
  d.launch(blocking, {d.read(y)});  // waits for prior legacy work
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineDefaultStreams, LegacyStreamDoesNotSynchronizeWithNonBlockingStreams) {
  engine_driver d;
  const auto legacy = d.legacy();
  const auto non_blocking = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(256), y = d.alloc(256);
  d.launch(non_blocking, {d.write(x)});
  d.launch(legacy, {d.read(x)});
  d.launch(legacy, {d.write(y)});
  d.launch(non_blocking, {d.read(y)});
  EXPECT_EQ(d.kinds(), (kind_list{stream_race, stream_race}));
  EXPECT_EQ(d.hazards(), (std::vector<hazard>{hazard::read_after_write,
                                              hazard::read_after_write}));
}

TEST(EngineDefaultStreams, BlockingStreamsDoNotSynchronizeWithEachOther) {
  engine_driver d;
  d.legacy();
  const auto a = d.stream(stream_flavor::blocking), b = d.stream(stream_flavor::blocking);
  const auto x = d.alloc(256);
  d.launch(a, {d.write(x)});
  d.launch(b, {d.read(x)});
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
}

TEST(EngineDefaultStreams, LegacyStreamIsTransitiveBetweenBlockingStreams) {
  engine_driver d;
  const auto legacy = d.legacy();
  const auto a = d.stream(stream_flavor::blocking), b = d.stream(stream_flavor::blocking);
  const auto x = d.alloc(256), tmp = d.alloc(8);
  d.launch(a, {d.write(x)});
  d.launch(legacy, {d.write(tmp)});  // waits for a; b's later work waits for it
  d.launch(b, {d.read(x)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineDefaultStreams, EventRecordedOnLegacyStreamCoversBlockingWork) {
  engine_driver d;
  const auto legacy = d.legacy();
  const auto blocking = d.stream(stream_flavor::blocking);
  const auto side = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(256);
  const auto e = d.event();
  d.launch(blocking, {d.write(x)});
  d.record(e, legacy);
  d.wait(e, side);
  d.launch(side, {d.read(x)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineDefaultStreams, PerThreadDefaultStreamIsAnOrdinaryBlockingStream) {
  engine_driver d;
  const auto legacy = d.legacy();
  const auto per_thread = d.stream(stream_flavor::per_thread_default);
  const auto other = d.stream(stream_flavor::blocking);
  const auto x = d.alloc(256), y = d.alloc(256);
  d.launch(per_thread, {d.write(x)});
  d.launch(legacy, {d.read(x)});  // legacy waits for it, as for any blocking stream
  d.launch(per_thread, {d.write(y)});
  d.launch(other, {d.read(y)});  // but it does not synchronize with other streams
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.diagnostics()[0].allocation->id, y);
}

TEST(EngineDefaultStreams, StreamsOfAnotherDeviceDoNotSynchronizeWithLegacy) {
  engine_driver d;
  const auto legacy0 = d.legacy(0);
  const auto blocking1 = d.stream(stream_flavor::blocking, 1);
  const auto x = d.alloc(256);
  d.launch(blocking1, {d.write(x)});
  d.launch(legacy0, {d.read(x)});
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
}

// ---- host synchronization ----

TEST(EngineHostSync, DeviceSynchronizeOrdersWhatCameBeforeButNotAfter) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(256, memory_kind::managed);
  d.launch(s1, {d.write(x)});
  d.device_sync();
  d.host({d.read(x)});
  EXPECT_TRUE(d.diagnostics().empty());
  d.launch(s1, {d.write(x)});
  d.host({d.read(x)});
  ASSERT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_EQ(d.diagnostics()[0].hazard_kind, hazard::read_after_write);
  EXPECT_EQ(d.diagnostics()[0].current.context, context_kind::host_thread);
  EXPECT_EQ(d.diagnostics()[0].previous->context, context_kind::stream);
}

TEST(EngineHostSync, DeviceSynchronizeCoversOnlyItsDevice) {
  engine_driver d;
  const auto s0 = d.stream(stream_flavor::blocking, 0);
  const auto s1 = d.stream(stream_flavor::blocking, 1);
  const auto x = d.alloc(256, memory_kind::managed), y = d.alloc(256, memory_kind::managed);
  d.launch(s0, {d.write(x)});
  d.launch(s1, {d.write(y)});
  d.device_sync(0);
  d.host({d.read(x)});
  d.host({d.read(y)});
  ASSERT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_EQ(d.diagnostics()[0].allocation->id, y);
}

TEST(EngineHostSync, StreamCreatedAfterDeviceSynchronizeIsOrderedAfterIt) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(256);
  d.launch(s1, {d.write(x)});
  d.device_sync();
  const auto s2 = d.stream();
  // Another thread uses the new stream: only the stream's own clock can
  // order it after the synchronize.
  d.on_other_thread([&] { d.launch(s2, {d.read(x)}); });
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineHostSync, StreamCreatedWithoutSynchronizeIsNotOrdered) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(256);
  d.launch(s1, {d.write(x)});
  const auto s2 = d.stream();
  d.on_other_thread([&] { d.launch(s2, {d.read(x)}); });
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
}

TEST(EngineHostSync, StreamSynchronizeCoversExactlyThatStream) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256, memory_kind::pinned_host), y = d.alloc(256, memory_kind::pinned_host);
  d.launch(s1, {d.write(x)});
  d.launch(s2, {d.write(y)});
  d.sync(s1);
  d.host({d.read(x)});
  d.host({d.read(y)});
  ASSERT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_EQ(d.diagnostics()[0].allocation->id, y);
}

TEST(EngineHostSync, StreamSynchronizeDoesNotCoverLaterWork) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(256, memory_kind::pinned_host);
  d.launch(s1, {d.read(x)});
  d.sync(s1);
  d.launch(s1, {d.read(x)});
  d.host({d.write(x)});
  ASSERT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_EQ(d.diagnostics()[0].hazard_kind, hazard::write_after_read);
}

TEST(EngineHostSync, EventSynchronizeCoversExactlyTheRecordedWork) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(256, memory_kind::pinned_host), y = d.alloc(256, memory_kind::pinned_host);
  const auto e = d.event();
  d.launch(s1, {d.write(x)});
  d.record(e, s1);
  d.launch(s1, {d.write(y)});
  d.event_sync(e);
  d.host({d.read(x)});
  d.host({d.read(y)});
  ASSERT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_EQ(d.diagnostics()[0].allocation->id, y);
}

TEST(EngineHostSync, StreamQueryTrueOrdersAndFalseDoesNot) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(256, memory_kind::pinned_host);
  d.launch(s1, {d.write(x)});
  d.query(s1, false);
  d.host({d.read(x)}, "too early");
  d.query(s1, true);
  d.host({d.read(x)}, "after completion");
  ASSERT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_EQ(d.eng().tables().string(d.diagnostics()[0].current.name), "too early");
}

TEST(EngineHostSync, EventQueryTrueOrdersAndFalseDoesNot) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(256, memory_kind::pinned_host);
  const auto e = d.event();
  d.launch(s1, {d.write(x)});
  d.record(e, s1);
  d.event_query(e, false);
  d.host({d.read(x)}, "too early");
  d.event_query(e, true);
  d.host({d.read(x)}, "after completion");
  ASSERT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_EQ(d.eng().tables().string(d.diagnostics()[0].current.name), "too early");
}

TEST(EngineHostSync, HostWorkBeforeALaunchIsOrderedBeforeIt) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(256, memory_kind::pinned_host);
  d.host({d.write(x)});
  d.launch(s1, {d.read(x), d.write(x)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineHostSync, HostWorkAfterALaunchRacesWithIt) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(256, memory_kind::pinned_host);
  d.launch(s1, {d.read(x)});
  d.host({d.write(x)});
  ASSERT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_EQ(d.diagnostics()[0].hazard_kind, hazard::write_after_read);
}

TEST(EngineHostSync, HostWorkOnOneThreadIsNotOrderedBeforeAnotherThreadsLaunch) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(256, memory_kind::pinned_host);
  const auto e = d.event();
  d.launch(s1, {d.read(x)});
  d.record(e, s1);
  d.host({d.write(x)});  // after the record: not captured by e
  d.on_other_thread([&] {
    d.wait(e, s2);
    d.launch(s2, {d.read(x)});
  });
  // The host write races with s1's read (WAR). Against s2's read (RAW) the
  // log shows no order either, but the writing thread had seen its own write
  // complete, so a handshake between the threads may order it (Note [Host
  // threads order what the log does not show]): counted, not reported.
  EXPECT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_EQ(d.hazards(), (std::vector<hazard>{hazard::write_after_read}));
  EXPECT_EQ(d.eng().statistics().host_ordered_conflicts, 1u);
}

TEST(EngineHostSync, TwoHostThreadsAreNotReportedButCounted) {
  engine_driver d;
  const auto x = d.alloc(256, memory_kind::pinned_host);
  d.host({d.write(x)});
  d.on_other_thread([&] { d.host({d.write(x)}); });
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_EQ(d.eng().statistics().host_host_conflicts, 1u);
}

}  // namespace
}  // namespace streamsan
