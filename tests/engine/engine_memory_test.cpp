// Byte ranges, allocation lifetimes, caching allocators, copies, memsets.
#include <gtest/gtest.h>

#include "tests/engine/engine_driver.h"

namespace streamsan {
namespace engine_memory_test {  // Note [Unity test programs in the sanitizer passes]
namespace {

using testing::engine_driver;
using testing::kind_list;
constexpr auto stream_race = diagnostic_kind::stream_race;
constexpr auto host_device_race = diagnostic_kind::host_device_race;
constexpr auto free_while_in_use = diagnostic_kind::free_while_in_use;

// ---- byte ranges ----

TEST(EngineMemory, DisjointRangesOfOneAllocationAreClean) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(1024);
  d.launch(s1, {d.write(x, 0, 512)});
  d.launch(s2, {d.write(x, 512, 512)});
  d.launch(s1, {d.read(x, 0, 512)});
  d.launch(s2, {d.read(x, 512, 512)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineMemory, PartialOverlapRacesOnTheOverlapOnly) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(1024);
  d.launch(s1, {d.write(x, 0, 600)});
  d.launch(s2, {d.write(x, 400, 624)});
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(r.hazard_kind, hazard::write_after_write);
  EXPECT_EQ(r.overlap_offset, 400u);
  EXPECT_EQ(r.overlap_size, 200u);
  // Each side keeps its whole range.
  EXPECT_EQ(r.current.offset, 400u);
  EXPECT_EQ(r.current.size, 624u);
  EXPECT_EQ(r.previous->offset, 0u);
  EXPECT_EQ(r.previous->size, 600u);
}

TEST(EngineMemory, AccessesWithoutAllocationAreIgnoredAndUnknownOnesCounted) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const access untracked{{alloc_id{}, 0, 64}, access_mode::write};
  const access unknown{{alloc_id{999}, 0, 64}, access_mode::write};
  d.launch(s1, {untracked, unknown});
  d.launch(s2, {untracked, unknown});
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_EQ(d.eng().statistics().accesses_untracked, 2u);
  EXPECT_EQ(d.eng().statistics().accesses_unknown_alloc, 2u);
}

// Note [Per launch, not per access]: a launch counts its accesses as
// checked at once, and an access to no allocation, to an unknown one or to
// a freed one takes itself back off.
TEST(EngineMemory, OnlyAccessesToLiveAllocationsCountAsChecked) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto live = d.alloc(256), gone = d.alloc(256);
  d.free(gone);
  const auto before = d.eng().statistics().accesses_checked;
  const access untracked{{alloc_id{}, 0, 64}, access_mode::write};
  const access unknown{{alloc_id{999}, 0, 64}, access_mode::write};
  d.launch(s1, {d.write(live), untracked, unknown, d.read(gone), d.read(live)});
  EXPECT_EQ(d.kinds(), (kind_list{diagnostic_kind::use_after_free}));
  EXPECT_EQ(d.eng().statistics().accesses_checked, before + 2);
}

// ---- frees (S-MEM-5) ----

TEST(EngineMemory, SynchronizingFreeWaitsForTheDevice) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(256);
  d.launch(s1, {d.write(x)});
  d.free(x, free_mode::synchronizing);
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineMemory, UnsynchronizedFreeWhileInUse) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(256, memory_kind::pinned_host);
  d.launch(s1, {d.read(x)});
  d.free(x, free_mode::unsynchronized);
  ASSERT_EQ(d.kinds(), (kind_list{free_while_in_use}));
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(r.hazard_kind, hazard::write_after_read);
  EXPECT_EQ(r.current.op, operation_kind::free);
  EXPECT_EQ(r.current.context, context_kind::host_thread);
  EXPECT_EQ(r.previous->stream, s1);
  EXPECT_EQ(r.overlap_size, 256u);
}

TEST(EngineMemory, UnsynchronizedFreeAfterSynchronizeIsClean) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(256, memory_kind::pinned_host);
  d.launch(s1, {d.write(x)});
  d.sync(s1);
  d.free(x, free_mode::unsynchronized);
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineMemory, StreamOrderedFreeMustBeOrderedAfterEveryUse) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc_async(256, s1);
  d.launch(s1, {d.write(x)});
  const auto e = d.event();
  d.record(e, s1);
  d.wait(e, s2);
  d.launch(s2, {d.read(x)});
  d.free(x, free_mode::stream_ordered, s1);  // s2's read is not ordered before it
  ASSERT_EQ(d.kinds(), (kind_list{free_while_in_use}));
  EXPECT_EQ(d.diagnostics()[0].current.stream, s1);
  EXPECT_EQ(d.diagnostics()[0].previous->stream, s2);
}

// cudaFree of cudaMallocAsync memory "will not perform any implicit
// synchronization" (rt-api, cudaFree).
TEST(EngineMemory, SynchronizingFreeOfStreamOrderedMemoryDoesNotSynchronize) {
  engine_driver d;
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto a = d.alloc_async(256, s);
  const auto b = d.alloc_async(256, s);
  d.launch(s, {d.write(a), d.write(b)});
  d.free(a);
  ASSERT_EQ(d.kinds(), (kind_list{free_while_in_use}));
  EXPECT_EQ(d.diagnostics()[0].current.op, operation_kind::free);
  d.sync(s);
  d.free(b);
  EXPECT_EQ(d.diagnostics().size(), 1u);
}

TEST(EngineMemory, UseAfterFree) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(256);
  d.launch(s1, {d.write(x)});
  d.free(x);
  d.launch(s1, {d.read(x)});
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::use_after_free}));
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(r.previous->op, operation_kind::free);
  EXPECT_TRUE(r.allocation->freed);
}

TEST(EngineMemory, DoubleFreeIsUseAfterFree) {
  engine_driver d;
  const auto x = d.alloc(256);
  d.free(x);
  d.free(x);
  EXPECT_EQ(d.kinds(), (kind_list{diagnostic_kind::use_after_free}));
}

TEST(EngineMemory, FreedAllocationsAreForgottenAfterTheConfiguredNumber) {
  engine_driver d(false, {.remembered_dead_objects = 2});
  const auto s1 = d.stream();
  const auto a = d.alloc(64), b = d.alloc(64), c = d.alloc(64);
  d.free(a);
  d.free(b);
  d.free(c);  // a is forgotten now
  d.launch(s1, {d.read(a)});
  d.launch(s1, {d.read(b)});
  EXPECT_EQ(d.kinds(), (kind_list{diagnostic_kind::use_after_free}));
  EXPECT_EQ(d.diagnostics()[0].allocation->id, b);
  EXPECT_EQ(d.eng().statistics().accesses_unknown_alloc, 1u);
  EXPECT_EQ(d.eng().statistics().remembered_allocations, 2u);
}

TEST(EngineMemory, StreamOrderedAllocationUsedOnAnotherStreamWithoutOrdering) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc_async(256, s1);
  d.launch(s2, {d.write(x)});
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::use_before_alloc}));
  EXPECT_EQ(d.diagnostics()[0].previous->op, operation_kind::alloc);
  EXPECT_EQ(d.diagnostics()[0].previous->stream, s1);
}

TEST(EngineMemory, StreamOrderedAllocationUsedAfterAnEventIsClean) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc_async(256, s1);
  const auto e = d.event();
  d.record(e, s1);
  d.wait(e, s2);
  d.launch(s2, {d.write(x)});
  EXPECT_TRUE(d.diagnostics().empty());
}

// ---- caching allocators (S-MEM-1) ----

TEST(EngineMemory, CachedBlockReusedOnAnotherStreamWithoutOrderingRaces) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto segment = d.alloc(4096);
  const auto first = d.block(segment, 1024, 512, s1);
  d.launch(s1, {d.write(first)});
  d.free(first, free_mode::cached);
  // The allocator hands the same bytes out again, to s2, without
  // record_stream: nothing orders s2 after s1's use.
  const auto second = d.block(segment, 1024, 256, s2);
  d.launch(s2, {d.write(second)});
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(r.allocation->id, second);
  EXPECT_EQ(r.current.alloc, second);
  EXPECT_EQ(r.previous->alloc, first);
  EXPECT_EQ(r.overlap_offset, 0u);
  EXPECT_EQ(r.overlap_size, 256u);
}

TEST(EngineMemory, CachedBlockReusedAfterOrderingIsClean) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto segment = d.alloc(4096);
  const auto first = d.block(segment, 0, 512, s1);
  d.launch(s1, {d.write(first)});
  const auto e = d.event();
  d.record(e, s1);  // what record_stream arranges
  d.free(first, free_mode::cached);
  d.wait(e, s2);
  const auto second = d.block(segment, 0, 512, s2);
  d.launch(s2, {d.write(second)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineMemory, NeighbouringCachedBlocksDoNotConflict) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto segment = d.alloc(4096);
  const auto a = d.block(segment, 0, 2048);
  const auto b = d.block(segment, 2048, 2048);
  d.launch(s1, {d.write(a)});
  d.launch(s2, {d.write(b)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineMemory, FreedCachedBlockIdIsUseAfterFree) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto segment = d.alloc(4096);
  const auto a = d.block(segment, 0, 2048);
  d.free(a, free_mode::cached);
  d.launch(s1, {d.read(a)});
  EXPECT_EQ(d.kinds(), (kind_list{diagnostic_kind::use_after_free}));
}

TEST(EngineMemory, BlockOfAFreedSegmentIsUseAfterFree) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto segment = d.alloc(4096);
  const auto a = d.block(segment, 0, 2048);
  d.free(segment);
  d.launch(s1, {d.read(a)});
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::use_after_free}));
  EXPECT_EQ(d.diagnostics()[0].allocation->id, a);
  EXPECT_EQ(d.diagnostics()[0].previous->alloc, segment);
}

TEST(EngineMemory, NestedBlocksShareTheOutermostSegment) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto segment = d.alloc(4096);
  const auto outer = d.block(segment, 1024, 2048);
  const auto inner = d.block(outer, 512, 256);  // segment bytes 1536..1792
  d.launch(s1, {d.write(segment, 1600, 8)});
  d.launch(s2, {d.read(inner)});
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.diagnostics()[0].overlap_offset, 64u);
  EXPECT_EQ(d.diagnostics()[0].overlap_size, 8u);
}

TEST(EngineMemory, SynchronizingFreeDoesNotWaitForAnotherDevice) {
  engine_driver d;
  const auto peer = d.stream(stream_flavor::blocking, 1);
  const auto x = d.alloc(256, memory_kind::device, 0);
  d.launch(peer, {d.write(x)});  // peer access from device 1
  d.free(x, free_mode::synchronizing);
  ASSERT_EQ(d.kinds(), (kind_list{free_while_in_use}));
  EXPECT_EQ(d.diagnostics()[0].hazard_kind, hazard::write_after_write);
}

TEST(EngineMemory, StreamOrderedFreeOnTheSameStreamIsClean) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc_async(256, s1);
  d.launch(s1, {d.write(x)});
  d.launch(s1, {d.read(x)});
  d.free(x, free_mode::stream_ordered, s1);
  EXPECT_TRUE(d.diagnostics().empty());
  d.launch(s1, {d.read(x)});
  EXPECT_EQ(d.kinds(), (kind_list{diagnostic_kind::use_after_free}));
}

TEST(EngineMemory, FreeingForgetsTheHistory) {
  engine_driver d;
  const auto s1 = d.stream();
  const auto x = d.alloc(4096);
  d.launch(s1, {d.write(x, 0, 64), d.write(x, 128, 64), d.read(x, 1024, 64)});
  EXPECT_EQ(d.eng().statistics().history_segments, 3u);
  d.free(x);
  EXPECT_EQ(d.eng().statistics().history_segments, 0u);
  EXPECT_EQ(d.eng().statistics().history_bytes, 0u);
}

// ---- copies (S-COPY-1, S-COPY-2) ----

TEST(EngineCopies, SyncDeviceToHostThenHostReadIsClean) {
  engine_driver d;
  const auto s = d.legacy();
  const auto dev = d.alloc(256), host = d.alloc(256, memory_kind::pageable_host);
  d.launch(s, {d.write(dev)});
  d.memcpy(s, d.whole(host), memory_kind::pageable_host, d.whole(dev), memory_kind::device, false);
  d.host({d.read(host)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineCopies, AsyncDeviceToHostThenHostReadRaces) {
  engine_driver d;
  const auto s = d.stream();
  const auto dev = d.alloc(256), host = d.alloc(256, memory_kind::pageable_host);
  d.memcpy(s, d.whole(host), memory_kind::pageable_host, d.whole(dev), memory_kind::device, true);
  d.host({d.read(host)});
  ASSERT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_EQ(d.diagnostics()[0].previous->op, operation_kind::memcpy);
}

TEST(EngineCopies, AsyncDeviceToPinnedThenHostAccessBeforeSynchronizeRaces) {
  engine_driver d;
  const auto s = d.stream();
  const auto dev = d.alloc(256), pinned = d.alloc(256, memory_kind::pinned_host);
  d.launch(s, {d.write(dev)});
  d.memcpy(s, d.whole(pinned), memory_kind::pinned_host, d.whole(dev), memory_kind::device, true);
  d.host({d.write(pinned)});
  ASSERT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_EQ(d.diagnostics()[0].hazard_kind, hazard::write_after_write);
  d.sync(s);
  d.host({d.read(pinned)});
  EXPECT_EQ(d.diagnostics().size(), 1u);
}

TEST(EngineCopies, SyncPageableToDeviceStagesTheSourceButNotTheDestination) {
  engine_driver d;
  const auto s = d.stream(), other = d.stream();
  const auto dev = d.alloc(256), host = d.alloc(256, memory_kind::pageable_host);
  d.memcpy(s, d.whole(dev), memory_kind::device, d.whole(host), memory_kind::pageable_host, false);
  d.host({d.write(host)});  // the source was staged: reusing it is fine
  EXPECT_TRUE(d.diagnostics().empty());
  d.on_other_thread([&] { d.launch(other, {d.read(dev)}); });  // the DMA may still run
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
  // Another thread's launch is not ordered after the call's return at all.
  EXPECT_EQ(d.diagnostics()[0].certainty, diagnostic_certainty::confirmed);
}

// Note [Staged uploads]: the later use on the same thread would be ordered
// if the DMA had finished when cudaMemcpy returned, which the documentation
// does not promise: a possible race, with nothing to measure.
TEST(EngineCopies, AUseAfterASyncPageableUploadIsOnlyAPossibleRace) {
  engine_driver d;
  const auto s = d.stream(), other = d.stream();
  const auto dev = d.alloc(256), host = d.alloc(256, memory_kind::pageable_host);
  d.memcpy(s, d.whole(dev), memory_kind::device, d.whole(host), memory_kind::pageable_host, false);
  d.launch(other, {d.read(dev)});
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  const diagnostic& race = d.diagnostics()[0];
  EXPECT_EQ(race.certainty, diagnostic_certainty::candidate);
  EXPECT_EQ(race.previous->op, operation_kind::staged_upload);
  EXPECT_TRUE(inferred_sides(race).empty());
}

TEST(EngineCopies, AnUploadOverUnorderedStreamWorkIsStillARace) {
  engine_driver d;
  const auto s = d.stream(), other = d.stream();
  const auto dev = d.alloc(256), host = d.alloc(256, memory_kind::pageable_host);
  d.launch(other, {d.write(dev)});
  d.memcpy(s, d.whole(dev), memory_kind::device, d.whole(host), memory_kind::pageable_host, false);
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.diagnostics()[0].certainty, diagnostic_certainty::confirmed);
  EXPECT_EQ(d.diagnostics()[0].current.op, operation_kind::staged_upload);
}

TEST(EngineCopies, SyncPageableToDeviceWaitsForPriorStreamWorkOnTheSource) {
  engine_driver d;
  const auto s = d.stream();
  const auto dev = d.alloc(256), staging = d.alloc(256, memory_kind::pageable_host);
  d.host_func(s, {d.write(staging)});
  // The host synchronizes the stream before it reads the source itself.
  d.memcpy(s, d.whole(dev), memory_kind::device, d.whole(staging), memory_kind::pageable_host,
           false);
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineCopies, SyncPinnedToDeviceIsSynchronous) {
  engine_driver d;
  const auto s = d.stream();
  const auto dev = d.alloc(256), pinned = d.alloc(256, memory_kind::pinned_host);
  d.memcpy(s, d.whole(dev), memory_kind::device, d.whole(pinned), memory_kind::pinned_host, false);
  d.host({d.write(pinned)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineCopies, AsyncPinnedToDeviceThenHostWriteOfSourceRaces) {
  engine_driver d;
  const auto s = d.stream();
  const auto dev = d.alloc(256), pinned = d.alloc(256, memory_kind::pinned_host);
  d.memcpy(s, d.whole(dev), memory_kind::device, d.whole(pinned), memory_kind::pinned_host, true);
  d.host({d.write(pinned)});
  ASSERT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_EQ(d.diagnostics()[0].hazard_kind, hazard::write_after_read);
}

TEST(EngineCopies, AsyncPageableCopyIsNeverAssumedSynchronous) {
  engine_driver d;
  const auto s = d.stream();
  const auto dev = d.alloc(256), host = d.alloc(256, memory_kind::pageable_host);
  d.memcpy(s, d.whole(dev), memory_kind::device, d.whole(host), memory_kind::pageable_host, true);
  d.host({d.write(host)});
  EXPECT_EQ(d.kinds(), (kind_list{host_device_race}));
}

TEST(EngineCopies, DeviceToDeviceDoesNotSynchronizeTheHost) {
  engine_driver d;
  const auto s = d.stream();
  const auto a = d.alloc(256), b = d.alloc(256, memory_kind::managed);
  d.memcpy(s, d.whole(b), memory_kind::managed, d.whole(a), memory_kind::device, false);
  d.host({d.read(b)});
  EXPECT_EQ(d.kinds(), (kind_list{host_device_race}));
}

// S-COPY-2, S-STREAM-1: the async host-to-host copy is an operation of its
// stream and returns when done.
TEST(EngineCopies, AsyncHostToHostFollowsItsStreamAndCompletes) {
  engine_driver d;
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto a = d.alloc(256, memory_kind::pinned_host);
  const auto b = d.alloc(256, memory_kind::pageable_host);
  d.launch(s, {d.write(a)});
  d.memcpy(s, d.whole(b), memory_kind::pageable_host, d.whole(a), memory_kind::pinned_host, true);
  d.host({d.read(b), d.write(a)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineCopies, AsyncHostToHostOnAnotherStreamRacesWithTheWriter) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking), s2 = d.stream(stream_flavor::non_blocking);
  const auto a = d.alloc(256, memory_kind::pinned_host);
  const auto b = d.alloc(256, memory_kind::pageable_host);
  d.launch(s1, {d.write(a)});
  d.memcpy(s2, d.whole(b), memory_kind::pageable_host, d.whole(a), memory_kind::pinned_host, true);
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.diagnostics()[0].current.op, operation_kind::memcpy);
  EXPECT_EQ(d.diagnostics()[0].current.stream, s2);
  EXPECT_EQ(d.diagnostics()[0].previous->stream, s1);
}

// S-COPY-1 with S-DEFAULT-1: a host-to-host cudaMemcpy is an operation of the
// legacy default stream, which waits for every blocking stream; the host
// returns after it, so work it issues next is ordered after theirs.
TEST(EngineCopies, SyncHostToHostOnTheLegacyStreamWaitsForBlockingStreams) {
  for (const auto flavor : {stream_flavor::blocking, stream_flavor::non_blocking}) {
    engine_driver d;
    const auto legacy = d.legacy();
    const auto producer = d.stream(flavor), consumer = d.stream(stream_flavor::non_blocking);
    const auto p = d.alloc(256, memory_kind::pinned_host), dev = d.alloc(256);
    const auto h1 = d.alloc(64, memory_kind::pageable_host);
    const auto h2 = d.alloc(64, memory_kind::pageable_host);
    d.launch(producer, {d.write(p)});
    d.memcpy(legacy, d.whole(h2), memory_kind::pageable_host, d.whole(h1),
             memory_kind::pageable_host, false);
    d.memcpy(consumer, d.whole(dev), memory_kind::device, d.whole(p), memory_kind::pinned_host,
             true);
    if (flavor == stream_flavor::blocking) {
      EXPECT_TRUE(d.diagnostics().empty());
    } else {  // S-DEFAULT-2: the legacy stream does not wait for it
      EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
    }
  }
}

TEST(EngineCopies, SyncHostToHostOnThePerThreadStreamIgnoresOtherBlockingStreams) {
  engine_driver d;
  const auto per_thread = d.stream(stream_flavor::per_thread_default);
  const auto producer = d.stream(stream_flavor::blocking);
  const auto p = d.alloc(256, memory_kind::pinned_host);
  const auto h = d.alloc(256, memory_kind::pageable_host);
  d.launch(producer, {d.write(p)});
  d.memcpy(per_thread, d.whole(h), memory_kind::pageable_host, d.whole(p),
           memory_kind::pinned_host, false);
  // The per-thread stream is an ordinary blocking stream (S-DEFAULT-3).
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
}

// S-COPY-1: the pageable upload's "stream sync" covers the default stream's
// own prior work, not blocking-stream work issued after it.
TEST(EngineCopies, SyncPageableUploadSynchronizesOnlyItsStream) {
  engine_driver d;
  const auto legacy = d.legacy();
  const auto b = d.stream(stream_flavor::blocking);
  const auto p = d.alloc(256, memory_kind::pinned_host), q = d.alloc(256, memory_kind::pinned_host);
  const auto dev = d.alloc(256), h = d.alloc(256, memory_kind::pageable_host);
  d.launch(b, {d.write(p)});
  d.launch(legacy, {d.read(dev)});  // waits for b's write of p (S-DEFAULT-1)
  d.launch(b, {d.write(q)});        // after the last legacy operation
  d.memcpy(legacy, d.whole(dev), memory_kind::device, d.whole(h), memory_kind::pageable_host,
           false);
  d.host({d.read(p)});
  EXPECT_TRUE(d.diagnostics().empty());
  d.host({d.read(q)});
  ASSERT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_EQ(d.diagnostics()[0].previous->stream, b);
}

TEST(EngineCopies, CrossDeviceCopyIsAnOperationOfTheIssuingStream) {
  engine_driver d;
  const auto s0 = d.stream(stream_flavor::blocking, 0);
  const auto s1 = d.stream(stream_flavor::blocking, 1);
  const auto a = d.alloc(256, memory_kind::device, 0), b = d.alloc(256, memory_kind::device, 1);
  d.launch(s1, {d.write(b)});
  d.memcpy(s0, d.whole(b), memory_kind::device, d.whole(a), memory_kind::device, true);
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.diagnostics()[0].current.stream, s0);
}

// ---- memsets (S-COPY-4) ----

TEST(EngineMemsets, SyncMemsetOfDeviceMemoryIsAsynchronous) {
  engine_driver d;
  const auto legacy = d.legacy(), s = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(256);
  d.memset(legacy, d.whole(x), memory_kind::device, false);
  d.launch(s, {d.read(x)});
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
}

// S-COPY-4: "fully synchronous" for a Unified Memory region: the memset has
// completed when the call returns, so a kernel the host launches next on a
// non-blocking stream, and the host itself, are ordered after it.
TEST(EngineMemsets, SyncMemsetOfManagedMemoryIsSynchronous) {
  engine_driver d;
  const auto legacy = d.legacy(), s = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(256, memory_kind::managed);
  d.memset(legacy, d.whole(x), memory_kind::managed, false);
  d.launch(s, {d.read(x)});
  d.sync(s);
  d.host({d.read(x)});
  EXPECT_TRUE(d.diagnostics().empty());
  d.memset(legacy, d.whole(x), memory_kind::managed, true);  // the Async form is not
  d.launch(s, {d.read(x)});
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
}

TEST(EngineMemsets, SyncMemsetOfACachedBlockOfManagedMemoryIsSynchronous) {
  engine_driver d;
  const auto legacy = d.legacy();
  const auto segment = d.alloc(1024, memory_kind::managed);
  const auto blk = d.block(segment, 256, 256, legacy);
  d.memset(legacy, d.whole(blk), memory_kind::cached_block, false);
  d.host({d.read(blk)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(EngineMemsets, SyncMemsetOfPinnedMemoryIsSynchronous) {
  engine_driver d;
  const auto s = d.stream();
  const auto x = d.alloc(256, memory_kind::pinned_host);
  d.memset(s, d.whole(x), memory_kind::pinned_host, false);
  d.host({d.read(x)});
  EXPECT_TRUE(d.diagnostics().empty());
  d.memset(s, d.whole(x), memory_kind::pinned_host, true);
  d.host({d.read(x)});
  EXPECT_EQ(d.kinds(), (kind_list{host_device_race}));
}

}  // namespace
}  // namespace engine_memory_test
}  // namespace streamsan
