// The launch tracker over the fake Sanitizer API and driver: what becomes of
// a launch whose hand-over to the model throws (Note [A decoding job that
// throws] in inject/sanitizer_api/launch_tracker.cpp), with the decode on
// the polling thread and on a decoding thread of its own.
#include "inject/sanitizer_api/launch_tracker.h"

#include <gtest/gtest.h>
#include <sanitizer.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "inject/precise/footprint_record.h"
#include "tests/inject/fake_cuda_driver.h"
#include "tests/inject/fake_sanitizer_api.h"
#include "tests/inject/sanitizer_test_handles.h"

namespace streamsan::sanitizer_api {
namespace {

namespace sp = streamsan::precise;

using namespace sanitizer_test_handles;  // tests/inject/sanitizer_test_handles.h

// One try of `done`: the launch and what it was handed.
struct handed_over {
  launch_tracker::launch_id id = 0;
  bool complete = false;
  bool failed = false;
  std::size_t intervals = 0;

  friend bool operator==(const handed_over&, const handed_over&) = default;
};
void PrintTo(const handed_over& h, std::ostream* out) {
  *out << "{" << h.id << (h.complete ? " complete" : "") << (h.failed ? " failed" : "") << " "
       << h.intervals << " intervals}";
}

// The parameter: whether the tracker decodes on a thread of its own.
class LaunchTracker : public ::testing::TestWithParam<bool> {
 protected:
  std::optional<launch_tracker> tracker;
  std::uintptr_t next_launch = 0x100;
  std::vector<handed_over> tries;  // every call of `done`, in order
  std::vector<std::pair<CUfunction, std::string>> told;  // the failure callback

  void SetUp() override {
    fake_sanitizer_reset();
    fake_cuda_create_context(ctx);  // a test may have destroyed it
    fake_cuda_hold_events(false);
    const load_result loaded = load_sanitizer_library();
    ASSERT_NE(loaded.library, nullptr) << loaded.error;
    const auto driver = resolve_tracker_driver();
    ASSERT_TRUE(driver.has_value());
    tracker.emplace(*loaded.library, *driver, options());
    tracker->set_decode_thread(GetParam());
    tracker->set_failure_callback(
        [this](CUfunction f, const char* why) { told.emplace_back(f, why); });
    std::string why;
    ASSERT_EQ(tracker->patch_module(ctx, module_a, why), launch_tracker::patch_outcome::patched)
        << why;
  }

  virtual tracker_options options() const { return {}; }

  const sp::table_view* last_table = nullptr;  // the last launch()'s

  // A measured launch of fill that writes `runs` runs of 64 bytes, 128
  // apart, from buffer + offset; its id. The table it got in `capacity`
  // (main slots) and `spill` (its spill region's: Note [The room to grow
  // is read only when used]).
  launch_tracker::launch_id launch(std::uint64_t offset, std::uint32_t runs = 1,
                                   std::uint32_t* capacity = nullptr,
                                   std::uint32_t slot_estimate = 0,
                                   std::uint32_t* spill = nullptr) {
    Sanitizer_LaunchData l{};
    l.context = ctx;
    l.module = module_a;
    l.function = fill;
    l.stream = stream_1;
    l.hStream = reinterpret_cast<Sanitizer_StreamHandle>(stream_1);
    l.hLaunch = reinterpret_cast<Sanitizer_LaunchHandle>(next_launch++);
    tracker->launch_begin(l, true, slot_estimate);
    const auto* table = static_cast<const sp::table_view*>(fake_sanitizer_userdata(l.hLaunch));
    for (std::uint32_t r = 0; table != nullptr && r < runs; ++r) {
      sp::record_span(*table, buffer + offset + r * 128, 64, sp::footprint_kind::write);
    }
    if (capacity != nullptr) *capacity = table != nullptr ? table->capacity : 0;
    if (spill != nullptr) *spill = table != nullptr ? table->spill_capacity : 0;
    last_table = table;
    tracker->launch_end(l);
    return tracker->launched().value_or(0);
  }

  // The tables of three launches of fill, each read back: one run, then
  // `runs` twice, all with `slot_estimate` (Note [Tables sized from
  // measured launches]). Fatal failures: call it in ASSERT_NO_FATAL_FAILURE.
  struct grown_tables {
    std::uint32_t grown = 0, grown_spill = 0;  // the first launch of `runs`
    std::uint32_t next = 0;                    // main slots of the second
  };
  void one_run_then_more_twice(std::uint32_t runs, std::uint32_t slot_estimate,
                               grown_tables& t) {
    ASSERT_EQ(launch(0, 1, nullptr, slot_estimate), 1u);
    read_back_all(0, 0);
    ASSERT_EQ(launch(0, runs, &t.grown, slot_estimate, &t.grown_spill), 2u);
    read_back_all(0, 0);
    ASSERT_EQ(launch(0, runs, &t.next, slot_estimate), 3u);
    read_back_all(0, 0);
  }

  // Reads back every launch; `done` throws for launch `refused` on every
  // try up to `refusals`.
  void read_back_all(launch_tracker::launch_id refused, int refusals) {
    int refused_so_far = 0;
    tracker->poll(true, [&](launch_tracker::launch_id id, const sp::decoded_footprint& d) {
      tries.push_back({id, d.complete, d.failed, d.intervals.size()});
      if (id == refused && refused_so_far++ < refusals) {
        throw std::runtime_error("the model refused it (test)");
      }
    });
    tracker->wait_decoded();
  }
};

INSTANTIATE_TEST_SUITE_P(Decoding, LaunchTracker, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "OnItsThread" : "Inline"; });

// Note [Tables sized from measured launches]: the first launch takes the
// estimate (every pointer to the end of its allocation), a later one what
// the kernel's measurements showed, with room to grow. (The helper's runs
// lie 128 bytes apart: 32 to a page.)
TEST_P(LaunchTracker, ALaterLaunchIsSizedFromTheKernelsMeasurementsNotItsEstimate) {
  constexpr std::uint32_t estimate = 1u << 16;
  std::uint32_t first = 0, first_spill = 1, second = 0, second_spill = 0;
  ASSERT_EQ(launch(0, 1, &first, estimate, &first_spill), 1u);
  read_back_all(0, 0);
  ASSERT_EQ(launch(0, 1, &second, estimate, &second_spill), 2u);
  read_back_all(0, 0);
  EXPECT_EQ(first, estimate);
  EXPECT_EQ(first_spill, 0u);
  // One page measured: the least hint, 16 slots, and its room apart.
  EXPECT_EQ(second, 16u);
  EXPECT_EQ(second_spill, 16u * launch_tracker::default_estimate_headroom);
  EXPECT_EQ(tries, (std::vector<handed_over>{{1, true, false, 1}, {2, true, false, 1}}));
  EXPECT_EQ(tracker->stats().spilled, 0u);
}

// STREAMSAN_TABLE_HEADROOM=4: after a launch of one page, the kernel's next
// table has room of 4 times the least hint, 64 slots, and a launch of 100
// pages outgrows it (with the default room, 256 slots, it would not).
TEST_P(LaunchTracker, ASmallerHeadroomLeavesLessRoomToGrow) {
  tracker->set_estimate_headroom(4);
  std::uint32_t second = 0, spill = 0;
  ASSERT_EQ(launch(0, 1, nullptr, 1u << 16), 1u);
  read_back_all(0, 0);
  ASSERT_EQ(launch(0, 100 * 32, &second, 1u << 16, &spill), 2u);
  read_back_all(0, 0);
  EXPECT_EQ(second, 16u);
  EXPECT_EQ(spill, 64u);
  ASSERT_EQ(tries.size(), 2u);
  EXPECT_FALSE(tries[1].complete);  // outgrown: not a measurement
}

TEST_P(LaunchTracker, AnEstimateWithinTheRoomIsKeptAndNoneShrinksATableBelowTheHint) {
  std::uint32_t first = 0, second = 0, third = 0, second_spill = 0, third_spill = 1;
  ASSERT_EQ(launch(0, 1, &first, 64), 1u);
  read_back_all(0, 0);
  // 64: within the room of a hint of 16
  ASSERT_EQ(launch(0, 1, &second, 64, &second_spill), 2u);
  read_back_all(0, 0);
  // the hint, 16, over an estimate of 4, and no room
  ASSERT_EQ(launch(0, 1, &third, 4, &third_spill), 3u);
  read_back_all(0, 0);
  EXPECT_EQ(first, 64u);
  EXPECT_EQ(second, 16u);
  EXPECT_EQ(second_spill, 64u);
  EXPECT_EQ(third, 16u);
  EXPECT_EQ(third_spill, 0u);
}

// The hint is the kernel's largest launch: a small launch between two
// large ones leaves the second its table.
TEST_P(LaunchTracker, AKernelKeepsRoomForItsLargestLaunch) {
  constexpr std::uint32_t estimate = 1u << 16;
  constexpr std::uint32_t large = 32 * 1024;  // 1,024 pages
  std::uint32_t capacity = 0;
  ASSERT_EQ(launch(0, large, &capacity, estimate), 1u);
  read_back_all(0, 0);
  ASSERT_EQ(launch(0, 1, &capacity, estimate), 2u);
  read_back_all(0, 0);
  ASSERT_EQ(launch(0, large, &capacity, estimate), 3u);
  read_back_all(0, 0);
  EXPECT_GE(capacity, 2 * 1024u);
  ASSERT_EQ(tries.size(), 3u);
  EXPECT_EQ(tries[2], (handed_over{3, true, false, large}));
  EXPECT_EQ(tracker->stats().incomplete, 0u);
}

// A launch that outgrows a table sized from a small launch before it is
// not a measurement, and its kernel's next table is large enough.
TEST_P(LaunchTracker, ALaunchThatOutgrowsItsTableLeavesALargerOneToTheNext) {
  constexpr std::uint32_t runs = 32 * 1024;  // 1,024 pages
  grown_tables t;
  ASSERT_NO_FATAL_FAILURE(one_run_then_more_twice(runs, 1u << 16, t));
  EXPECT_EQ(t.grown, 16u);
  EXPECT_EQ(t.grown_spill, 16u * launch_tracker::default_estimate_headroom);
  EXPECT_GE(t.next, 2 * 1024u);
  ASSERT_EQ(tries.size(), 3u);
  EXPECT_EQ(tries[0], (handed_over{1, true, false, 1}));
  EXPECT_FALSE(tries[1].complete);  // what its table held, not a measurement
  EXPECT_FALSE(tries[1].failed);
  EXPECT_EQ(tries[2], (handed_over{3, true, false, runs}));
  EXPECT_EQ(tracker->stats().incomplete, 1u);
}

// Note [What a destroyed context took with it]: after the context is
// destroyed and its handle names a new one, a launch there gets a new
// table, and nothing of the old context (table, event) is used again, at
// a launch or at the tracker's end.
TEST_P(LaunchTracker, NothingOfADestroyedContextIsUsedAgain) {
  const int uses = fake_cuda_destroyed_context_uses();
  ASSERT_EQ(launch(0, 3), 1u);
  read_back_all(0, 0);
  ASSERT_EQ(launch(0, 3), 2u);  // a table of the size the next launch asks for
  const sp::table_view* const second = last_table;
  read_back_all(0, 0);  // its table and event go back to the pools
  tracker->context_destroying(ctx);
  fake_cuda_destroy_context(ctx);
  fake_cuda_create_context(ctx);  // the same handle, a new context
  ASSERT_EQ(launch(0, 3), 3u);
  EXPECT_NE(last_table, second);
  read_back_all(0, 0);
  EXPECT_EQ(tries, (std::vector<handed_over>{
                       {1, true, false, 3}, {2, true, false, 3}, {3, true, false, 3}}));
  // Its modules went with it; one loaded in the new context is patched
  // with the patch code added to that context (H200: refused without).
  const int added = fake_sanitizer_patches_added(ctx);
  tracker->module_unloaded(module_a);
  std::string why;
  ASSERT_EQ(tracker->patch_module(ctx, module_a, why), launch_tracker::patch_outcome::patched)
      << why;
  EXPECT_EQ(fake_sanitizer_patches_added(ctx), added + 1);
  tracker.reset();
  EXPECT_EQ(fake_cuda_destroyed_context_uses(), uses);
}

// Note [The room to grow is read only when used]: a launch that outgrows
// its table's main region but fits its room spills and is still a
// measurement; its kernel's next main region is sized from it.
TEST_P(LaunchTracker, ALaunchThatOutgrowsItsMainRegionSpillsAndIsStillMeasured) {
  constexpr std::uint32_t runs = 100 * 32;  // 100 pages
  grown_tables t;
  ASSERT_NO_FATAL_FAILURE(one_run_then_more_twice(runs, 1u << 16, t));
  EXPECT_EQ(t.grown, 16u);
  EXPECT_EQ(t.grown_spill, 16u * launch_tracker::default_estimate_headroom);
  EXPECT_EQ(t.next, 256u);  // twice its 100 pages
  ASSERT_EQ(tries.size(), 3u);
  EXPECT_EQ(tries[1], (handed_over{2, true, false, runs}));
  EXPECT_EQ(tries[2], (handed_over{3, true, false, runs}));
  EXPECT_EQ(tracker->stats().spilled, 1u);
  EXPECT_EQ(tracker->stats().incomplete, 0u);
}

// Note [Read-backs land in page-locked memory]: the summaries and the
// bitmaps (three runs in one page: its bitmap is read) are copied into
// memory the driver has pinned.
TEST_P(LaunchTracker, ReadBacksAreCopiedIntoPinnedMemory) {
  ASSERT_EQ(launch(0, 3), 1u);
  const int copies = fake_sanitizer_copies_to_host();
  const int pinned = fake_sanitizer_copies_to_pinned_host();
  read_back_all(0, 0);
  EXPECT_EQ(tries, (std::vector<handed_over>{{1, true, false, 3}}));
  EXPECT_EQ(fake_sanitizer_copies_to_host(), copies + 2);
  EXPECT_EQ(fake_sanitizer_copies_to_pinned_host(), pinned + 2);
}

// Memory the driver will not pin is used as it is: the footprint is the same.
TEST_P(LaunchTracker, AReadBackTheDriverWillNotPinIsCopiedPageable) {
  fake_cuda_refuse_host_register(true);
  ASSERT_EQ(launch(0, 3), 1u);
  const int copies = fake_sanitizer_copies_to_host();
  const int pinned = fake_sanitizer_copies_to_pinned_host();
  read_back_all(0, 0);
  fake_cuda_refuse_host_register(false);
  EXPECT_EQ(tries, (std::vector<handed_over>{{1, true, false, 3}}));
  EXPECT_EQ(fake_sanitizer_copies_to_host(), copies + 2);
  EXPECT_EQ(fake_sanitizer_copies_to_pinned_host(), pinned);
}

// The tracker's end takes its pins back; a pin made in a context destroyed
// since went with it, and its handle is not used again.
TEST_P(LaunchTracker, PinsAreTakenBackUnlessTheirContextWasDestroyed) {
  const int unregistered = fake_cuda_host_unregistrations();
  const int uses = fake_cuda_destroyed_context_uses();
  ASSERT_EQ(launch(0, 3), 1u);
  read_back_all(0, 0);
  tracker.reset();
  EXPECT_EQ(fake_cuda_host_unregistrations(), unregistered + 2);  // summaries, bitmaps

  SetUp();
  ASSERT_EQ(launch(0, 3), 1u);
  read_back_all(0, 0);
  tracker->context_destroying(ctx);
  fake_cuda_destroy_context(ctx);
  tracker.reset();
  EXPECT_EQ(fake_cuda_host_unregistrations(), unregistered + 2);
  EXPECT_EQ(fake_cuda_host_registrations(), 0u);
  EXPECT_EQ(fake_cuda_destroyed_context_uses(), uses);
}

// A context made with a destroyed one's handle gets a private stream of its
// own for the read-backs; the destroyed one's went with it.
TEST_P(LaunchTracker, ANewContextWithADestroyedOnesHandleGetsItsOwnPrivateStream) {
  ASSERT_EQ(launch(0, 3), 1u);
  read_back_all(0, 0);
  const Sanitizer_StreamHandle before = fake_sanitizer_last_copy_stream();
  ASSERT_NE(before, nullptr);
  ASSERT_EQ(launch(4096, 3), 2u);
  read_back_all(0, 0);
  EXPECT_EQ(fake_sanitizer_last_copy_stream(), before);  // one stream per context

  tracker->context_destroying(ctx);
  fake_cuda_destroy_context(ctx);
  fake_cuda_create_context(ctx);
  ASSERT_EQ(launch(8192, 3), 3u);
  read_back_all(0, 0);
  EXPECT_NE(fake_sanitizer_last_copy_stream(), before);
  EXPECT_EQ(tries.size(), 3u);
  EXPECT_TRUE(tries.back().complete);
}

// The hand-over threw: the launch is handed over again, unmeasured, before
// the next launch; the failure is counted and told with the kernel.
TEST_P(LaunchTracker, AHandOverThatThrowsIsMadeAgainUnmeasured) {
  ASSERT_EQ(launch(0), 1u);
  ASSERT_EQ(launch(4096), 2u);
  ASSERT_EQ(launch(8192), 3u);
  read_back_all(2, 1);
  EXPECT_EQ(tries, (std::vector<handed_over>{{1, true, false, 1},
                                           {2, true, false, 1},
                                           {2, false, true, 0},
                                           {3, true, false, 1}}));
  const tracker_stats s = tracker->stats();
  EXPECT_EQ(s.measured, 3u);
  EXPECT_EQ(s.failed, 1u);
  EXPECT_EQ(s.decode_failed, 1u);
  EXPECT_EQ(s.jobs_thrown, 0u);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].first, fill);
  EXPECT_EQ(told[0].second, "the model refused it (test)");
}

// The unmeasured hand-over threw too: the worker's last resort counts it,
// and the next launch is still handed over.
TEST_P(LaunchTracker, WhatTheSecondHandOverThrowsIsCountedAndTheNextLaunchGoesOn) {
  ASSERT_EQ(launch(0), 1u);
  ASSERT_EQ(launch(4096), 2u);
  read_back_all(1, 2);
  EXPECT_EQ(tries, (std::vector<handed_over>{
                       {1, true, false, 1}, {1, false, true, 0}, {2, true, false, 1}}));
  const tracker_stats s = tracker->stats();
  EXPECT_EQ(s.decode_failed, 1u);
  EXPECT_EQ(s.jobs_thrown, 1u);
}

// Note [Launches in flight when the program is stopped]: the kernels still
// run (their events never complete), and every launch is handed over
// unmeasured, in order, without a read-back; a poll after finds nothing.
TEST_P(LaunchTracker, LaunchesInFlightAreAbandonedUnreadInOrder) {
  fake_cuda_hold_events(true);
  ASSERT_EQ(launch(0), 1u);
  ASSERT_EQ(launch(4096), 2u);
  ASSERT_EQ(launch(8192), 3u);
  const auto done = [this](launch_tracker::launch_id id, const sp::decoded_footprint& d) {
    tries.push_back({id, d.complete, d.failed, d.intervals.size()});
  };
  EXPECT_EQ(tracker->abandon(done), 3u);
  tracker->wait_decoded();
  EXPECT_EQ(tries, (std::vector<handed_over>{
                       {1, false, true, 0}, {2, false, true, 0}, {3, false, true, 0}}));
  EXPECT_EQ(tracker->in_flight(), 0u);
  const tracker_stats s = tracker->stats();
  EXPECT_EQ(s.abandoned, 3u);
  EXPECT_EQ(s.measured, 0u);
  EXPECT_EQ(s.bytes_read_back, 0u);
  tracker->poll(true, done);
  tracker->wait_decoded();
  EXPECT_EQ(tries.size(), 3u);
  fake_cuda_hold_events(false);
}

// Note [A signal while the report is made]: the exit's drain (poll(true))
// waiting for a kernel that does not end returns once hurried, and what it
// left in flight is abandoned in order.
TEST_P(LaunchTracker, AHurriedDrainStopsWaitingForKernels) {
  fake_cuda_hold_events(true);
  ASSERT_EQ(launch(0), 1u);
  ASSERT_EQ(launch(4096), 2u);
  const auto done = [this](launch_tracker::launch_id id, const sp::decoded_footprint& d) {
    tries.push_back({id, d.complete, d.failed, d.intervals.size()});
  };
  std::thread signal([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    tracker->hurry();
  });
  tracker->poll(true, done);
  signal.join();
  EXPECT_EQ(tracker->in_flight(), 2u);
  EXPECT_EQ(tracker->abandon(done), 2u);
  tracker->wait_decoded();
  EXPECT_EQ(tries, (std::vector<handed_over>{{1, false, true, 0}, {2, false, true, 0}}));
  fake_cuda_hold_events(false);
}

// Note [A footprint too fragmented to use]: a launch with more runs than
// the budget is handed over unmeasured and counted, and the kernel's next
// table is sized from its pages, not grown as after an overflow.
class LaunchTrackerRunBudget : public LaunchTracker {
 protected:
  tracker_options options() const override {
    tracker_options o;
    o.max_runs = 4;
    return o;
  }
};

INSTANTIATE_TEST_SUITE_P(Decoding, LaunchTrackerRunBudget, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "OnItsThread" : "Inline"; });

TEST_P(LaunchTrackerRunBudget, ALaunchWithTooManyRunsIsNotAMeasurementAndGetsNoLargerTable) {
  std::uint32_t first = 0, next = 0;
  ASSERT_EQ(launch(0, 8, &first), 1u);
  read_back_all(0, 0);
  ASSERT_EQ(launch(0, 2, &next), 2u);
  read_back_all(0, 0);
  EXPECT_EQ(tries, (std::vector<handed_over>{{1, false, false, 0}, {2, true, false, 2}}));
  const tracker_stats s = tracker->stats();
  EXPECT_EQ(s.too_fragmented, 1u);
  EXPECT_EQ(s.incomplete, 1u);
  EXPECT_EQ(s.failed, 0u);
  EXPECT_GT(first, 0u);
  EXPECT_LE(next, first);
}

}  // namespace
}  // namespace streamsan::sanitizer_api
