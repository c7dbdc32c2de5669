#include <gtest/gtest.h>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

using testing::expect_error;

constexpr std::uint64_t mib = std::uint64_t{1} << 20;

void expect_stat(const memory_stat& s, std::int64_t current, std::int64_t peak,
                 std::int64_t allocated, std::int64_t freed, const char* name) {
  EXPECT_EQ(s.current, current) << name;
  EXPECT_EQ(s.peak, peak) << name;
  EXPECT_EQ(s.allocated, allocated) << name;
  EXPECT_EQ(s.freed, freed) << name;
}

// A 64 MiB sim device; `progress` 0 leaves all work until the host waits.
class CachingAllocator : public ::testing::Test {
 protected:
  void start(unsigned progress) {
    auto options = testing::test_options(1, progress);
    options.sim.memory_per_device = 64 * mib;
    initialize(options);
  }
  void SetUp() override { start(500); }
  void TearDown() override { shutdown(); }
  // The fraction of this device's memory that is `bytes`.
  static double fraction_for(std::uint64_t bytes) {
    return static_cast<double>(bytes) / static_cast<double>(get_device_properties().total_memory);
  }
};

TEST_F(CachingAllocator, ExactStatisticsAfterAKnownSequence) {
  stream s;
  auto a = caching_allocate(1000, s);  // 1024 bytes, from a new 2 MiB segment
  auto b = caching_allocate(3000, s);  // 3072 bytes, same segment
  auto st = get_memory_stats();
  expect_stat(st.allocation, 2, 2, 2, 0, "allocation");
  expect_stat(st.segment, 1, 1, 1, 0, "segment");
  expect_stat(st.active, 2, 2, 2, 0, "active");
  expect_stat(st.allocated_bytes, 4096, 4096, 4096, 0, "allocated_bytes");
  expect_stat(st.reserved_bytes, 2 * mib, 2 * mib, 2 * mib, 0, "reserved_bytes");
  expect_stat(st.active_bytes, 4096, 4096, 4096, 0, "active_bytes");

  a.free();
  st = get_memory_stats();
  expect_stat(st.allocation, 1, 2, 2, 1, "allocation");
  expect_stat(st.active, 1, 2, 2, 1, "active");
  expect_stat(st.allocated_bytes, 3072, 4096, 4096, 1024, "allocated_bytes");

  auto c = caching_allocate(5 * mib, s);  // large: a new 20 MiB segment
  st = get_memory_stats();
  expect_stat(st.segment, 2, 2, 2, 0, "segment");
  expect_stat(st.reserved_bytes, 22 * mib, 22 * mib, 22 * mib, 0, "reserved_bytes");
  expect_stat(st.allocated_bytes, 5 * mib + 3072, 5 * mib + 3072, 5 * mib + 4096, 1024,
              "allocated_bytes");
  EXPECT_EQ(memory_allocated(), 5 * mib + 3072);
  EXPECT_EQ(memory_reserved(), 22 * mib);

  b.free();
  c.free();
  st = get_memory_stats();
  expect_stat(st.allocation, 0, 2, 3, 3, "allocation");
  expect_stat(st.allocated_bytes, 0, 5 * mib + 3072, 5 * mib + 4096, 5 * mib + 4096,
              "allocated_bytes");
  expect_stat(st.reserved_bytes, 22 * mib, 22 * mib, 22 * mib, 0, "reserved_bytes");  // cached

  empty_cache();
  st = get_memory_stats();
  expect_stat(st.segment, 0, 2, 2, 2, "segment");
  expect_stat(st.reserved_bytes, 0, 22 * mib, 22 * mib, 22 * mib, "reserved_bytes");
  EXPECT_EQ(max_memory_allocated(), 5 * mib + 3072);
  EXPECT_EQ(max_memory_reserved(), 22 * mib);
  EXPECT_EQ(st.num_alloc_retries, 0u);
  EXPECT_EQ(st.num_ooms, 0u);
}

TEST_F(CachingAllocator, ResetPeakMemoryStatsLowersPeaksToCurrent) {
  stream s;
  {
    auto a = caching_allocate(8192, s);
  }
  reset_peak_memory_stats();
  const auto st = get_memory_stats();
  expect_stat(st.allocated_bytes, 0, 0, 8192, 8192, "allocated_bytes");
  expect_stat(st.reserved_bytes, 2 * mib, 2 * mib, 2 * mib, 0, "reserved_bytes");
}

TEST_F(CachingAllocator, AFreedBlockIsReusedOnItsStream) {
  stream s;
  void* first = nullptr;
  {
    auto a = caching_allocate(1000, s);
    first = a.data();
  }
  auto b = caching_allocate(900, s);
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(get_memory_stats().segment.current, 1);
}

TEST_F(CachingAllocator, BlocksAreNotSharedAcrossStreams) {
  stream s1;
  stream s2;
  void* first = nullptr;
  {
    auto a = caching_allocate(1000, s1);
    first = a.data();
  }
  auto b = caching_allocate(1000, s2);
  EXPECT_NE(b.data(), first);
  EXPECT_EQ(get_memory_stats().segment.current, 2);
}

TEST_F(CachingAllocator, RecordStreamBlocksReuseUntilTheStreamFinishes) {
  start(0);
  if (!testing::on_sim()) GTEST_SKIP() << "needs the sim backend";
  stream s1;
  stream s2;
  auto a = caching_allocate(4096, s1);
  void* first = a.data();
  launch(s2, kernels::spin{std::chrono::milliseconds(1)}, writes(a));
  a.record_stream(s2);
  a.free();
  auto st = get_memory_stats();
  EXPECT_EQ(st.allocation.current, 0);
  EXPECT_EQ(st.active.current, 1);  // awaiting s2's event (S-MEM-1)
  auto b = caching_allocate(4096, s1);
  EXPECT_NE(b.data(), first);
  s2.synchronize();
  auto c = caching_allocate(4096, s1);
  EXPECT_EQ(c.data(), first);  // reusable once s2's work completed
  EXPECT_EQ(get_memory_stats().active.current, 2);
}

TEST_F(CachingAllocator, AViewWithAnOffsetProtectsTheWholeBlock) {
  start(0);
  if (!testing::on_sim()) GTEST_SKIP() << "needs the sim backend";
  stream s1;
  stream s2;
  auto a = caching_allocate(4096, s1);
  void* first = a.data();
  const auto tail = a.subview(2048, 512);
  launch(s2, kernels::spin{std::chrono::milliseconds(1)}, reads(tail));
  record_stream(tail, s2);
  a.free();
  auto b = caching_allocate(1024, s1);  // would fit in the block's first bytes
  EXPECT_NE(b.data(), first);
  s2.synchronize();
  auto c = caching_allocate(1024, s1);
  EXPECT_EQ(c.data(), first);
}

TEST_F(CachingAllocator, RecordStreamOnTheBlocksOwnStreamIsIgnored) {
  testing::kept_log log;
  stream s;
  auto a = caching_allocate(4096, s);
  a.record_stream(s);
  a.free();
  EXPECT_EQ(log.count<event_record>(), 0u);
  EXPECT_EQ(get_memory_stats().active.current, 0);
}

TEST_F(CachingAllocator, RecordStreamNeedsACachedBlock) {
  stream s;
  auto raw = allocate_device(64);
  expect_error<usage_error>([&] { record_stream(raw, s); },
                            "record_stream(" + to_string(raw.alloc()) + ", " + s.name() +
                                "): not memory from the caching allocator");
  auto block = caching_allocate(64, s);
  const auto view = block.view();
  block.free();
  expect_error<usage_error>([&] { record_stream(view, s); },
                            "record_stream(" + to_string(view.alloc()) + ", " + s.name() + "): " +
                                to_string(view.alloc()) +
                                " is not a live caching-allocator block");
}

TEST_F(CachingAllocator, AnOomRetryFreesCachedBlocks) {
  set_per_process_memory_fraction(fraction_for(24 * mib));
  stream s1;
  stream s2;
  {
    auto a = caching_allocate(15 * mib, s1);  // a 16 MiB segment, then cached
  }
  auto b = caching_allocate(15 * mib, s2);  // 32 MiB > 24 MiB: free the cache, retry
  const auto st = get_memory_stats();
  EXPECT_EQ(st.num_alloc_retries, 1u);
  EXPECT_EQ(st.num_ooms, 0u);
  expect_stat(st.segment, 1, 1, 2, 1, "segment");
  EXPECT_EQ(memory_reserved(), 16 * mib);
}

TEST_F(CachingAllocator, BeyondTheFractionIsOutOfMemoryNamingRequestAndLimit) {
  const double fraction = fraction_for(24 * mib);  // 0.375 of the sim's 64 MiB
  set_per_process_memory_fraction(fraction);
  stream s;
  try {
    auto a = caching_allocate(30 * mib, s);
    ADD_FAILURE() << "no out-of-memory error";
  } catch (const out_of_memory_error& e) {
    if (testing::on_sim()) {
      EXPECT_EQ(std::string(e.what()),
                "caching_allocate(31457280 bytes, " + s.name() +
                    "): tried to allocate 30.00 MiB (31457280 bytes) on device 0 for " + s.name() +
                    "; the allocator is limited to 24.00 MiB by "
                    "set_per_process_memory_fraction(0.375) of 64.00 MiB; 0 B reserved, 0 B "
                    "allocated (out of memory)");
    }
  }
  const auto st = get_memory_stats();
  EXPECT_EQ(st.num_ooms, 1u);
  EXPECT_EQ(st.num_alloc_retries, 1u);
  auto fits = caching_allocate(20 * mib, s);  // 20 MiB still fits
  EXPECT_EQ(memory_reserved(), 20 * mib);
}

TEST_F(CachingAllocator, TheFractionMustBeBetweenZeroAndOne) {
  expect_error<usage_error>([] { set_per_process_memory_fraction(1.5); },
                            "set_per_process_memory_fraction(1.500000): the fraction must be in "
                            "[0, 1]");
}

TEST_F(CachingAllocator, EmptyCacheNeverFreesLiveMemory) {
  stream s;
  auto live = caching_allocate(1024 * sizeof(float), s);
  {
    auto big = caching_allocate(12 * mib, s);
  }
  EXPECT_EQ(memory_reserved(), 2 * mib + 12 * mib);
  empty_cache();  // S-MEM-3
  EXPECT_EQ(memory_reserved(), 2 * mib);
  EXPECT_EQ(memory_allocated(), 4096u);
  launch(s, kernels::fill{live, 1.5f});
  s.synchronize();
  EXPECT_EQ(testing::read_back(live)[1023], 1.5f);
}

TEST_F(CachingAllocator, SplitBlocksMergeBackWhenFreed) {
  stream s;
  auto a = caching_allocate(512, s);
  auto b = caching_allocate(512, s);
  auto c = caching_allocate(512, s);
  void* start = a.data();
  a.free();
  c.free();
  b.free();  // merges with both neighbours and the rest of the segment
  auto whole = caching_allocate(mib, s);  // needs the merged 2 MiB block's start
  EXPECT_EQ(whole.data(), start);
  EXPECT_EQ(get_memory_stats().segment.current, 1);
}

TEST_F(CachingAllocator, MemorySummaryShowsTheStatistics) {
  stream s;
  auto a = caching_allocate(1000, s);
  const auto text = memory_summary();
  EXPECT_NE(text.find("Allocated memory"), std::string::npos);
  EXPECT_NE(text.find("1.00 KiB"), std::string::npos);
  EXPECT_NE(text.find("Reserved memory"), std::string::npos);
  EXPECT_NE(text.find("2.00 MiB"), std::string::npos);
  EXPECT_NE(text.find("Alloc retries: 0   OOMs: 0"), std::string::npos);
}

TEST_F(CachingAllocator, EveryReuseDecisionIsInTheLog) {
  testing::kept_log log;
  stream s1;
  stream s2;
  auto a = caching_allocate(1000, s1);
  const auto first = a.alloc();
  a.record_stream(s2);
  a.free();
  s2.synchronize();
  auto b = caching_allocate(1000, s1);
  const auto allocs = log.all<alloc_record>();
  ASSERT_EQ(allocs.size(), 3u);
  EXPECT_EQ(allocs[0].kind, memory_kind::device);  // the segment
  EXPECT_EQ(allocs[0].size, 2 * mib);
  for (const auto i : {1, 2}) {
    EXPECT_EQ(allocs[i].kind, memory_kind::cached_block);
    EXPECT_EQ(allocs[i].parent, allocs[0].alloc);
    EXPECT_EQ(allocs[i].parent_offset, 0u);
    EXPECT_EQ(allocs[i].stream, s1.id());
    EXPECT_EQ(allocs[i].size, 1024u);
  }
  EXPECT_EQ(allocs[1].alloc, first);
  EXPECT_EQ(allocs[2].alloc, b.alloc());
  EXPECT_NE(b.alloc(), first);
  const auto frees = log.all<free_record>();
  ASSERT_EQ(frees.size(), 1u);
  EXPECT_EQ(frees[0].alloc, first);
  EXPECT_EQ(frees[0].mode, free_mode::cached);
  const auto records = log.all<event_record>();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].stream, s2.id());
  const auto queries = log.all<event_query>();
  ASSERT_EQ(queries.size(), 1u);
  EXPECT_EQ(queries[0].event, records[0].event);
  EXPECT_TRUE(queries[0].complete);
}

}  // namespace
}  // namespace streamsan::rt
