// The footprint table on the host: many threads record intervals the way
// lanes do on the GPU, and decoding gives back exactly the bytes recorded,
// per kind, coalesced.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "inject/precise/footprint_decode.h"
#include "inject/precise/footprint_record.h"

namespace streamsan::precise {
namespace {

// A table in host memory, standing in for the device allocation.
class host_table {
 public:
  explicit host_table(std::uint32_t capacity)
      : layout_(layout_for(capacity)), storage_((layout_.bytes + 63) / 8 + 8, ~0ull) {
    // Fresh device memory holds anything: only the cleared region is reset.
    base_ = reinterpret_cast<std::uintptr_t>(storage_.data());
    view_ = view_at(base_, layout_);
    clear();
  }
  const table_view& view() const { return view_; }
  decoded_footprint decode(std::uint32_t expected_pages = 16) const {
    return decode_footprint(
        layout_, base_,
        [](void* dst, std::uint64_t src, std::size_t n) {
          std::memcpy(dst, reinterpret_cast<const void*>(src), n);
          return true;
        },
        expected_pages);
  }
  // As the host does before each launch.
  void clear() {
    std::memset(reinterpret_cast<void*>(base_ + layout_.cleared_offset), 0,
                layout_.cleared_end - layout_.cleared_offset);
  }

 private:
  table_layout layout_;
  std::vector<std::uint64_t> storage_;
  std::uintptr_t base_ = 0;
  table_view view_;
};

constexpr std::uint64_t heap = 0x7f0000000000ull;

TEST(FootprintTable, OneCoalescedIntervalNeedsNoBitmap) {
  host_table t(16);
  record_span(t.view(), heap + 100, 3900, footprint_kind::write);
  const auto d = t.decode();
  ASSERT_TRUE(d.complete);
  EXPECT_EQ(d.pages, 1u);
  EXPECT_EQ(d.fragmented_pages, 0u);
  EXPECT_EQ(d.intervals,
            (std::vector<measured_interval>{{heap + 100, heap + 4000, footprint_kind::write}}));
}

TEST(FootprintTable, IntervalsAcrossPagesJoin) {
  host_table t(16);
  record_span(t.view(), heap + 4000, 10000, footprint_kind::read);
  const auto d = t.decode();
  EXPECT_EQ(d.pages, 4u);
  EXPECT_EQ(d.intervals,
            (std::vector<measured_interval>{{heap + 4000, heap + 14000, footprint_kind::read}}));
}

// Note [Slots decoded in page order]: slots come in the order warps reached
// their pages; the decoded runs do not depend on it.
TEST(FootprintTable, PagesRecordedOutOfOrderJoin) {
  host_table t(16);
  for (const std::uint64_t p : {3, 1, 0, 2}) {
    record_span(t.view(), heap + p * page_bytes, page_bytes, footprint_kind::read);
    record_span(t.view(), heap + p * page_bytes, 64, footprint_kind::write);
  }
  const auto d = t.decode();
  EXPECT_EQ(d.pages, 8u);
  EXPECT_EQ(d.intervals, (std::vector<measured_interval>{
                             {heap, heap + 4 * page_bytes, footprint_kind::read},
                             {heap, heap + 64, footprint_kind::write},
                             {heap + page_bytes, heap + page_bytes + 64, footprint_kind::write},
                             {heap + 2 * page_bytes, heap + 2 * page_bytes + 64, footprint_kind::write},
                             {heap + 3 * page_bytes, heap + 3 * page_bytes + 64, footprint_kind::write}}));
}

// A summary no lane could have written (its page has no bucket key) is
// not decoded as a footprint: the launch keeps its inferred one.
TEST(FootprintTable, ASummaryNamingAnImpossiblePageIsNotAMeasurement) {
  host_table t(4);
  record_span(t.view(), heap, 8, footprint_kind::read);
  t.view().pages[0].page = max_page + 1;
  const auto d = t.decode();
  EXPECT_FALSE(d.complete);
  EXPECT_TRUE(d.intervals.empty());
}

TEST(FootprintTable, KindsStayApart) {
  host_table t(16);
  record_span(t.view(), heap, 8, footprint_kind::read);
  record_span(t.view(), heap + 8, 8, footprint_kind::write);
  record_span(t.view(), heap + 4, 8, footprint_kind::atomic);
  EXPECT_EQ(t.decode().intervals, (std::vector<measured_interval>{
                                      {heap, heap + 8, footprint_kind::read},
                                      {heap + 8, heap + 16, footprint_kind::write},
                                      {heap + 4, heap + 12, footprint_kind::atomic}}));
}

TEST(FootprintTable, StridedAccessesStayExact) {
  host_table t(16);
  for (std::uint64_t i = 0; i < 1024; ++i) record_span(t.view(), heap + 8 * i, 4, footprint_kind::write);
  const auto d = t.decode();
  EXPECT_EQ(d.fragmented_pages, 2u);
  ASSERT_EQ(d.intervals.size(), 1024u);
  EXPECT_EQ(d.intervals[7], (measured_interval{heap + 56, heap + 60, footprint_kind::write}));
}

TEST(FootprintTable, RepeatedAccessesAddNothing) {
  host_table t(16);
  for (int i = 0; i < 100; ++i) record_span(t.view(), heap + 64, 128, footprint_kind::read);
  const auto d = t.decode();
  EXPECT_EQ(d.intervals,
            (std::vector<measured_interval>{{heap + 64, heap + 192, footprint_kind::read}}));
}

TEST(FootprintTable, OverflowIsReportedNotHidden) {
  host_table t(2);
  for (int p = 0; p < 5; ++p) record_span(t.view(), heap + p * page_bytes, 4, footprint_kind::read);
  const auto d = t.decode();
  EXPECT_FALSE(d.complete);
  EXPECT_EQ(d.pages, 2u);
}

TEST(FootprintTable, AFullTableTakesNoNewKeys) {
  host_table t(2);
  record_span(t.view(), heap, 4, footprint_kind::read);
  for (int p = 1; p < 50; ++p) record_span(t.view(), heap + p * page_bytes, 4, footprint_kind::write);
  std::size_t keys = 0;
  for (std::uint32_t b = 0; b <= t.view().bucket_mask; ++b) {
    keys += t.view().buckets[b] != 0 ? 1 : 0;
  }
  // The capacity's keys and the one that found the table full (marked
  // overflowed); after it, the overflow counter stops every new key before
  // it takes a bucket, so probing ends at an empty bucket.
  EXPECT_EQ(keys, 3u);
  EXPECT_EQ(t.view().counters->overflow, 1u);
  // An overflowed launch takes no new page; a page it has still records
  // (Note [No word every access reads]): its footprint is incomplete anyway.
  record_span(t.view(), heap + 8, 4, footprint_kind::read);
  EXPECT_EQ(t.view().pages[0].bytes, 8u);
  record_span(t.view(), heap + 60 * page_bytes, 4, footprint_kind::read);
  EXPECT_EQ(t.view().counters->used, 3u);
  EXPECT_FALSE(t.decode().complete);
}

// A slot taken again after the clear starts empty (the host's clear covers
// the slots too: Note [Pages inserted without waiting]), so a fragmented
// page decodes without the last launch's bytes.
TEST(FootprintTable, ClearingStartsAFreshLaunch) {
  host_table t(4);
  record_span(t.view(), heap + 64, 64, footprint_kind::write);
  t.clear();
  record_span(t.view(), heap + page_bytes, 8, footprint_kind::read);
  record_span(t.view(), heap + page_bytes + 200, 8, footprint_kind::read);
  const auto d = t.decode();
  EXPECT_EQ(d.fragmented_pages, 1u);
  EXPECT_EQ(d.intervals,
            (std::vector<measured_interval>{
                {heap + page_bytes, heap + page_bytes + 8, footprint_kind::read},
                {heap + page_bytes + 200, heap + page_bytes + 208, footprint_kind::read}}));
}

// Threads race on the same pages, like warps of one kernel; the decoded
// footprint is exactly the union of what they recorded.
TEST(FootprintTable, ConcurrentRecordingIsExact) {
  host_table t(256);
  constexpr int threads = 8;
  std::vector<std::vector<measured_interval>> recorded(threads);
  std::vector<std::thread> pool;
  for (int k = 0; k < threads; ++k) {
    pool.emplace_back([&, k] {
      std::mt19937_64 rng(k);
      for (int i = 0; i < 4000; ++i) {
        const std::uint64_t offset = rng() % (64 * page_bytes);
        const std::uint64_t size = 1 + rng() % 64;
        const auto kind = static_cast<footprint_kind>(rng() % kind_count);
        record_span(t.view(), heap + offset, size, kind);
        recorded[k].push_back({heap + offset, heap + offset + size, kind});
      }
    });
  }
  for (auto& th : pool) th.join();
  std::vector<measured_interval> expected;
  for (auto& r : recorded) expected.insert(expected.end(), r.begin(), r.end());
  coalesce(expected);
  const auto d = t.decode();
  EXPECT_TRUE(d.complete);
  EXPECT_EQ(d.intervals, expected);
}

// The device's coalesced path (Note [A coalesced span is recorded by
// several lanes]): one lane finds the slot, then lanes record their shares
// of the span's words at once and add their own bytes to the summary. Spans of groups racing on
// the same pages, some of them re-read, decode exactly as if one lane had
// recorded each span.
TEST(FootprintTable, WordsSetByManyLanesDecodeAsOneSpan) {
  host_table t(64);
  constexpr std::uint32_t lanes = 4;
  std::vector<measured_interval> expected;
  std::vector<std::thread> groups;
  for (std::uint32_t g = 0; g < 4; ++g) {
    const std::uint64_t page = (heap >> page_shift) + g % 2;
    const std::uint32_t begin = 16 * g + 4;  // not word-aligned: partial first word
    const std::uint32_t end = begin + 512;   // a float4 warp access: 17 words
    expected.push_back({(page << page_shift) + begin, (page << page_shift) + end,
                        footprint_kind::read});
    groups.emplace_back([&t, page, begin, end] {
      const std::uint32_t slot = slot_to_record(t.view(), page, footprint_kind::read);
      ASSERT_NE(slot, slot_overflowed);
      std::vector<std::thread> pool;
      for (std::uint32_t rank = 0; rank < lanes; ++rank) {
        pool.emplace_back(
            [&t, slot, rank, begin, end] { record_share(t.view(), slot, begin, end, rank, lanes); });
      }
      for (auto& th : pool) th.join();
    });
  }
  for (auto& th : groups) th.join();
  coalesce(expected);
  const auto d = t.decode();
  ASSERT_TRUE(d.complete);
  EXPECT_EQ(d.intervals, expected);
  EXPECT_EQ(d.pages, 2u);
  // Each page's byte count is its union's, however the lanes split it:
  // [4, 548) and [20, 564).
  EXPECT_EQ(t.view().pages[0].bytes + t.view().pages[1].bytes, 544u + 544u);
}

TEST(FootprintTable, AnOverflowedLaunchHandsOutNoSlot) {
  host_table t(1);
  ASSERT_NE(slot_to_record(t.view(), heap >> page_shift, footprint_kind::read), slot_overflowed);
  EXPECT_EQ(slot_to_record(t.view(), (heap >> page_shift) + 1, footprint_kind::read),
            slot_overflowed);
  EXPECT_EQ(t.view().counters->overflow, 1u);
  // From then on a new page is refused at the counter, without counting
  // again; the page the table holds keeps its slot (a hit reads only its
  // bucket: Note [No word every access reads]).
  EXPECT_EQ(slot_to_record(t.view(), (heap >> page_shift) + 2, footprint_kind::read),
            slot_overflowed);
  EXPECT_EQ(t.view().counters->overflow, 1u);
  EXPECT_EQ(slot_to_record(t.view(), heap >> page_shift, footprint_kind::read), 0u);
  EXPECT_EQ(t.view().counters->overflow, 1u);
}

// Note [A bucket holds its slot]: a page whose key does not fit a bucket
// would alias another page, so it makes the launch incomplete instead.
TEST(FootprintTable, APageBeyondTheKeyBitsIsAnOverflowNotAnotherPage) {
  host_table t(4);
  const std::uint64_t beyond = std::uint64_t{1} << 50;
  record_span(t.view(), beyond - page_bytes, 8, footprint_kind::atomic);  // the last page
  EXPECT_EQ(t.view().counters->used, 1u);
  EXPECT_EQ(t.view().counters->overflow, 0u);
  record_span(t.view(), beyond + 64, 8, footprint_kind::write);
  EXPECT_EQ(t.view().counters->overflow, 1u);
  EXPECT_EQ(t.view().counters->used, 1u);
  EXPECT_FALSE(t.decode().complete);
}

// A bucket's word names its key and its slot: a hit is one load.
TEST(FootprintTable, ABucketHoldsItsKeyAndSlot) {
  host_table t(4);
  const std::uint64_t page = heap >> page_shift;
  ASSERT_EQ(slot_to_record(t.view(), page, footprint_kind::read), 0u);
  ASSERT_EQ(slot_to_record(t.view(), page + 1, footprint_kind::write), 1u);
  std::size_t found = 0;
  for (std::uint32_t b = 0; b <= t.view().bucket_mask; ++b) {
    const std::uint64_t word = t.view().buckets[b];
    if (word == 0) continue;
    ++found;
    const bool first = word >> slot_bits == key_of(page, footprint_kind::read);
    EXPECT_EQ(slot_in(word), first ? 0u : 1u);
  }
  EXPECT_EQ(found, 2u);
  EXPECT_EQ(slot_to_record(t.view(), page + 1, footprint_kind::write), 1u);
}

TEST(FootprintTable, ReadsBackInOneCopyWhenThePageCountIsExpected) {
  host_table t(64);
  for (int p = 0; p < 10; ++p) record_span(t.view(), heap + p * page_bytes, 8, footprint_kind::read);
  EXPECT_EQ(t.decode(10).bytes_read_back, sizeof(table_counters) + 10 * sizeof(page_summary));
  // Fewer expected: a second copy fetches the rest, and nothing is lost.
  const auto d = t.decode(4);
  EXPECT_EQ(d.bytes_read_back, sizeof(table_counters) + 10 * sizeof(page_summary));
  EXPECT_EQ(d.intervals.size(), 10u);
}

TEST(FootprintTable, AReadBackTakesTheLastLaunchsPagesAndAnEighth) {
  // The tracker's hint for a kernel that used 49,152 pages is 98,304 slots.
  EXPECT_EQ(summaries_to_read(98304), 49152u + 6144u);
  EXPECT_EQ(summaries_to_read(16), 9u);
}

TEST(FootprintTable, DenseGroupRule) {
  // 32 lanes x 4 bytes, consecutive: one interval.
  EXPECT_TRUE(group_is_dense(0, 128, 32, true, true, 4));
  // Two lanes on one address, one lane 4 bytes further: a gap would be
  // hidden if duplicates counted twice.
  EXPECT_FALSE(group_is_dense(0, 12, 2, true, true, 4));
  // Mixed sizes or misaligned lanes are never merged.
  EXPECT_FALSE(group_is_dense(0, 8, 2, false, true, 4));
  EXPECT_FALSE(group_is_dense(0, 8, 2, true, false, 4));
}

TEST(FootprintTable, WholeWarpCoalescedRule) {
  constexpr std::uint64_t first = 0x7f0000001000;
  const std::uint32_t read4 = 4u << 2 | static_cast<std::uint32_t>(footprint_kind::read);
  const std::uint32_t write4 = 4u << 2 | static_cast<std::uint32_t>(footprint_kind::write);
  const std::uint32_t read16 = 16u << 2 | static_cast<std::uint32_t>(footprint_kind::read);
  // Lane i at first + 4i: every lane continues the access.
  for (std::uint32_t lane = 0; lane < 32; ++lane) {
    EXPECT_TRUE(lane_continues_coalesced(first, read4, first + 4 * lane, read4, lane)) << lane;
  }
  // A lane one element off, another size or another kind breaks it.
  EXPECT_FALSE(lane_continues_coalesced(first, read4, first + 4 * 6, read4, 5));
  EXPECT_FALSE(lane_continues_coalesced(first, read4, first + 4 * 5, read16, 5));
  EXPECT_FALSE(lane_continues_coalesced(first, read4, first + 4 * 5, write4, 5));
  // 32 float4s from offset 3584 end at the page's end; from 3600, the last
  // lane's bytes lie in the next page.
  EXPECT_TRUE(lane_continues_coalesced(first + 3584, read16, first + 3584, read16, 0));
  EXPECT_FALSE(lane_continues_coalesced(first + 3600, read16, first + 3600, read16, 0));
  // A size of zero never passes.
  EXPECT_FALSE(lane_continues_coalesced(first, 0, first, 0, 0));
}

}  // namespace
}  // namespace streamsan::precise
