// Note [First launches are measured once work can overlap]: which streams
// and host accesses let a program's work overlap, alone and through the
// model.
#include "inject/model/concurrency_watch.h"

#include <gtest/gtest.h>

#include "inject/model/cuda_model.h"
#include "tests/inject/model_fixture.h"

namespace streamsan::injection {
namespace {

TEST(ConcurrencyWatch, TheLegacyStreamAndOneBlockingStreamKeepOneOrder) {
  concurrency_watch w;
  EXPECT_FALSE(w.stream_added(0, stream_flavor::legacy_default));
  EXPECT_FALSE(w.stream_added(0, stream_flavor::blocking));
  EXPECT_FALSE(w.overlap_possible());
}

TEST(ConcurrencyWatch, TheLegacyStreamAndOnePerThreadStreamKeepOneOrder) {
  concurrency_watch w;
  EXPECT_FALSE(w.stream_added(0, stream_flavor::per_thread_default));
  EXPECT_FALSE(w.stream_added(0, stream_flavor::legacy_default));
  EXPECT_FALSE(w.overlap_possible());
}

TEST(ConcurrencyWatch, TwoBlockingStreamsDoNotOrderEachOther) {
  concurrency_watch w;
  EXPECT_FALSE(w.stream_added(0, stream_flavor::blocking));
  EXPECT_TRUE(w.stream_added(0, stream_flavor::blocking));
  EXPECT_TRUE(w.overlap_possible());
}

TEST(ConcurrencyWatch, ABlockingStreamAndAPerThreadStreamDoNotOrderEachOther) {
  concurrency_watch w;
  EXPECT_FALSE(w.stream_added(0, stream_flavor::per_thread_default));
  EXPECT_TRUE(w.stream_added(0, stream_flavor::blocking));
}

TEST(ConcurrencyWatch, ANonBlockingStreamAloneCanOverlapTheLegacyStream) {
  concurrency_watch w;
  EXPECT_TRUE(w.stream_added(0, stream_flavor::non_blocking));
  EXPECT_TRUE(w.overlap_possible());
}

TEST(ConcurrencyWatch, TwoDevicesLegacyStreamsOverlap) {
  concurrency_watch w;
  EXPECT_FALSE(w.stream_added(0, stream_flavor::legacy_default));
  EXPECT_TRUE(w.stream_added(1, stream_flavor::legacy_default));
}

TEST(ConcurrencyWatch, AHostAccessCanOverlapDeviceWork) {
  concurrency_watch w;
  EXPECT_TRUE(w.host_access_seen());
  EXPECT_TRUE(w.overlap_possible());
}

TEST(ConcurrencyWatch, OnceOnItStaysOnAndSaysSoOnce) {
  concurrency_watch w;
  EXPECT_TRUE(w.stream_added(0, stream_flavor::non_blocking));
  EXPECT_FALSE(w.stream_added(0, stream_flavor::blocking));
  EXPECT_FALSE(w.host_access_seen());
  EXPECT_TRUE(w.overlap_possible());
}

class WorkOverlap : public model_fixture {};

constexpr std::uintptr_t stream_a = 0x5000;
constexpr std::uintptr_t stream_b = 0x6000;
constexpr std::uint64_t buffer = 0x7e0000000000;

TEST_F(WorkOverlap, StreamsCountWhenMadeOrFirstSeen) {
  model.stream_synchronized(here, {0, false});  // the legacy stream, first seen
  model.stream_created(here, stream_a, 0, 0);
  EXPECT_FALSE(model.work_may_overlap());
  model.stream_queried(here, {stream_b}, true);  // made where we could not see it
  EXPECT_TRUE(model.work_may_overlap());
}

TEST_F(WorkOverlap, AnAnnotatedHostAccessCounts) {
  model.allocated(here, buffer, 64, memory_kind::pinned_host);
  EXPECT_FALSE(model.work_may_overlap());
  const annotated_range r{buffer, 16, access_mode::read, access_origin::exact};
  model.host_accessed(here, std::span(&r, 1), "h[0]");
  EXPECT_TRUE(model.work_may_overlap());
}

TEST_F(WorkOverlap, ALaunchMayRaceTheHostThroughAnyPointerWord) {
  driver.kernels[0xf00] = kernel_description{"_Z4copyPfS_", {{0, 8}, {8, 8}}, true};
  constexpr std::uint64_t device = 0x7e0000000000, pinned = 0x7f0000000000,
                          managed = 0x7d0000000000;
  model.allocated(here, device, 4096, memory_kind::device);
  model.allocated(here, pinned, 4096, memory_kind::pinned_host);
  model.allocated(here, managed, 4096, memory_kind::managed);
  model.stream_created(here, stream_a, 0, 0);
  const auto reaches = [&](std::uint64_t a, std::uint64_t b) {
    words.push_back({a, b});
    pointers.push_back({&words.back()[0], &words.back()[1]});
    return model.launch_may_race({stream_a}, 0xf00,
                                 kernel_arguments::from_pointers(pointers.back().data()));
  };
  EXPECT_FALSE(reaches(device, device + 64));
  EXPECT_FALSE(reaches(device, 0x1234));  // not memory streamsan tracks
  EXPECT_TRUE(reaches(device, pinned + 64));
  EXPECT_TRUE(reaches(managed, device));
}

TEST_F(WorkOverlap, ALaunchOnAStreamFirstSeenMayRaceWhenItLetsWorkOverlap) {
  driver.kernels[0xf00] = kernel_description{"_Z4fillPf", {{0, 8}}, true};
  model.allocated(here, buffer, 4096, memory_kind::device);
  const auto launch_on = [&](std::uintptr_t stream) {
    return model.launch_may_race({stream}, 0xf00, args(buffer));
  };
  EXPECT_FALSE(launch_on(stream_a));  // one blocking stream: one order
  EXPECT_EQ(sink.all<stream_create>().size(), 1u);
  EXPECT_FALSE(launch_on(stream_a));
  EXPECT_TRUE(launch_on(stream_b));  // a second one, made out of sight
  EXPECT_EQ(sink.all<stream_create>().size(), 2u);
}

// Note [IPC events]: the stream standing for other processes is never
// given work.
TEST_F(WorkOverlap, TheStandInForOtherProcessesDoesNotCount) {
  model.ipc_event_opened(here, 0xe7);
  EXPECT_EQ(sink.all<stream_create>().size(), 1u);
  EXPECT_FALSE(model.work_may_overlap());
}

}  // namespace
}  // namespace streamsan::injection
