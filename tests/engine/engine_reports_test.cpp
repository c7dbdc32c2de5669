// What a diagnostic carries: deduplication, NVTX paths, stacks, the live
// callback, unmodelled calls and the engine's counters.
#include <gtest/gtest.h>

#include "tests/engine/engine_driver.h"

namespace streamsan {
namespace {

using testing::engine_driver;
using testing::kind_list;

// One call site for the racing pair, reached on every iteration (not
// inlined into a loop that a compiler may copy).
[[gnu::noinline]] void racing_iteration(engine_driver& d, stream_id s1, stream_id s2, alloc_id x) {
  d.launch(s1, {d.write(x)});
  d.launch(s2, {d.write(x)});
}

TEST(EngineReports, RepeatsOfOneCallSitePairAreCounted) {
  engine_driver d(/*capture_stacks=*/true);
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(64);
  int callbacks = 0;
  d.eng().set_diagnostic_callback([&](const diagnostic&) { ++callbacks; });
  // One call site for all five: clang unrolls this loop otherwise, and each
  // copy of the call has a return address of its own.
#if defined(__clang__)
#pragma nounroll
#endif
  for (int i = 0; i < 5; ++i) racing_iteration(d, s1, s2, x);
  // Iteration 1: s2 races with s1. Later iterations: s1 races with the
  // previous s2 write (a second pair of call sites), then s2 with s1 again.
  ASSERT_EQ(d.diagnostics().size(), 2u);
  EXPECT_EQ(d.diagnostics()[0].count, 5u);
  EXPECT_EQ(d.diagnostics()[1].count, 4u);
  EXPECT_NE(d.diagnostics()[0].current.stack, stack_id{});
  EXPECT_EQ(callbacks, 2);
  EXPECT_EQ(d.eng().statistics().duplicate_diagnostics, 7u);
}

TEST(EngineReports, DistinctCallSitesAreNotFolded) {
  engine_driver d(/*capture_stacks=*/true);
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(64), y = d.alloc(64);
  d.launch(s1, {d.write(x)});
  d.launch(s2, {d.write(x)});
  d.launch(s1, {d.write(y)});
  d.launch(s2, {d.write(y)});
  ASSERT_EQ(d.diagnostics().size(), 2u);
  EXPECT_EQ(d.diagnostics()[0].count, 1u);
  EXPECT_EQ(d.diagnostics()[1].count, 1u);
}

TEST(EngineReports, WithoutStacksTheAllocationTellsReportsApart) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(64), y = d.alloc(64);
  for (int i = 0; i < 3; ++i) {
    d.launch(s1, {d.write(x), d.write(y)});
    d.launch(s2, {d.write(x), d.write(y)});
    d.sync(s1);
    d.sync(s2);
  }
  ASSERT_EQ(d.diagnostics().size(), 2u);
  EXPECT_EQ(d.diagnostics()[0].allocation->id, x);
  EXPECT_EQ(d.diagnostics()[0].count, 3u);
  EXPECT_EQ(d.diagnostics()[1].allocation->id, y);
  EXPECT_EQ(d.diagnostics()[1].count, 3u);
}

TEST(EngineReports, DeduplicationCanBeTurnedOff) {
  engine_driver d(false, {.deduplicate = false});
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(64);
  for (int i = 0; i < 3; ++i) {
    d.launch(s1, {d.write(x)});
    d.launch(s2, {d.write(x)});
    d.device_sync();
  }
  EXPECT_EQ(d.diagnostics().size(), 3u);
}

TEST(EngineReports, NvtxPathIsAttachedToBothSides) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(64);
  d.push("train");
  d.push("forward");
  d.launch(s1, {d.write(x)});
  d.pop();
  d.push("backward");
  d.launch(s2, {d.read(x)});
  d.pop();
  d.pop();
  ASSERT_EQ(d.diagnostics().size(), 1u);
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(d.eng().tables().string(r.current.nvtx_range), "train/backward");
  EXPECT_EQ(d.eng().tables().string(r.previous->nvtx_range), "train/forward");
  EXPECT_GE(raw(r.current.nvtx_range), first_engine_string_id);
  EXPECT_TRUE(d.eng().tables().has_string(r.current.nvtx_range));
}

TEST(EngineReports, NvtxRangesArePerThreadAndUnmatchedPopsAreCounted) {
  engine_driver d;
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(64);
  d.push("main");
  d.on_other_thread([&] {
    d.pop();  // nothing pushed on this thread
    d.launch(s1, {d.write(x)});
  });
  d.launch(s2, {d.write(x)});
  ASSERT_EQ(d.diagnostics().size(), 1u);
  EXPECT_EQ(d.diagnostics()[0].previous->nvtx_range, string_id{});
  EXPECT_EQ(d.eng().tables().string(d.diagnostics()[0].current.nvtx_range), "main");
  EXPECT_EQ(d.eng().statistics().unmatched_nvtx_pops, 1u);
}

TEST(EngineReports, AllocationRefCarriesTheAllocationSite) {
  engine_driver d(/*capture_stacks=*/true);
  const auto s1 = d.stream(), s2 = d.stream();
  const auto x = d.alloc(64, memory_kind::managed, 0);
  d.launch(s1, {d.write(x)});
  d.launch(s2, {d.write(x)});
  ASSERT_EQ(d.diagnostics().size(), 1u);
  const allocation_ref& a = *d.diagnostics()[0].allocation;
  EXPECT_EQ(a.id, x);
  EXPECT_EQ(a.kind, memory_kind::managed);
  EXPECT_EQ(a.size, 64u);
  EXPECT_NE(a.site, stack_id{});
  EXPECT_FALSE(a.freed);
  EXPECT_FALSE(d.eng().tables().stack(a.site).empty());
}

TEST(EngineReports, UnmodelledCallsAreCountedByName) {
  engine_driver d;
  d.unmodelled("cudaMemPrefetchAsync");
  d.unmodelled("cudaMemPrefetchAsync");
  d.unmodelled("cudaIpcOpenMemHandle");
  const auto& calls = d.eng().unmodelled_calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls.at("cudaMemPrefetchAsync"), 2u);
  EXPECT_EQ(calls.at("cudaIpcOpenMemHandle"), 1u);
}

TEST(EngineReports, RecordsAreCounted) {
  engine_driver d;
  d.device_sync();  // the thread's first record also emits its thread_start
  const auto before = d.eng().records_processed();
  d.stream();
  d.device_sync();
  EXPECT_EQ(d.eng().records_processed(), before + 2);
  EXPECT_EQ(d.eng().records_processed(), d.rec().records_emitted());
}

TEST(EngineReports, OperationsOnUnannouncedStreamsCreateThemImplicitly) {
  engine_driver d;
  const auto x = d.alloc(64);
  const stream_id unannounced{77};
  d.launch(stream_id{}, {d.write(x)});  // stream 0: the legacy default stream
  d.launch(unannounced, {d.read(x)});   // blocking: waits for legacy work
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_EQ(d.eng().statistics().implicit_streams, 2u);
}

TEST(EngineReports, HistoryMemoryStaysFlatForAFixedSetOfAllocations) {
  engine_driver d;
  std::vector<stream_id> streams;
  for (int i = 0; i < 4; ++i) streams.push_back(d.stream(stream_flavor::non_blocking));
  std::vector<alloc_id> buffers;
  for (int i = 0; i < 16; ++i) buffers.push_back(d.alloc(4096));
  const auto run = [&](int rounds) {
    for (int r = 0; r < rounds; ++r) {
      for (int i = 0; i < 16; ++i) {
        d.launch(streams[i % 4], {d.read(buffers[(i + 1) % 16]), d.read(buffers[(i + 5) % 16], 64, 512),
                                  d.write(buffers[i], 128, 1024)});
      }
      d.device_sync();
    }
  };
  run(50);
  const engine_statistics early = d.eng().statistics();
  run(500);
  const engine_statistics late = d.eng().statistics();
  EXPECT_EQ(late.history_segments, early.history_segments);
  EXPECT_EQ(late.history_reads, early.history_reads);
  EXPECT_EQ(late.history_bytes, early.history_bytes);
  EXPECT_GT(late.accesses_checked, 10 * early.history_reads);
}

}  // namespace
}  // namespace streamsan
