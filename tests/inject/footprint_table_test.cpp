// The footprint table on the host: many threads record intervals the way
// lanes do on the GPU, and decoding gives back exactly the bytes recorded,
// per kind, coalesced.
#include <gtest/gtest.h>

#include <algorithm>
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
  explicit host_table(std::uint32_t capacity, std::uint32_t spill = 0)
      : layout_(layout_for(capacity, spill)), storage_((layout_.bytes + 63) / 8 + 8, ~0ull) {
    // Fresh device memory holds anything: only the cleared region is reset.
    base_ = reinterpret_cast<std::uintptr_t>(storage_.data());
    view_ = view_at(base_, layout_);
    clear();
  }
  const table_view& view() const { return view_; }
  decoded_footprint decode(std::uint32_t bitmap_window = bitmap_window_slots,
                           std::size_t max_runs = max_runs_per_launch) const {
    copies_ = 0;
    decode_scratch scratch;
    return decode_footprint(
        layout_, base_,
        [this](void* dst, std::uint64_t src, std::size_t n) {
          ++copies_;
          std::memcpy(dst, reinterpret_cast<const void*>(src), n);
          return true;
        },
        scratch, bitmap_window, max_runs);
  }
  // Copies the last decode() made.
  int copies() const { return copies_; }
  const table_layout& layout() const { return layout_; }
  std::uintptr_t base() const { return base_; }
  // The slots holding a key.
  std::vector<std::uint32_t> used_slots() const {
    std::vector<std::uint32_t> used;
    for (std::uint32_t s = 0; s < layout_.slots(); ++s) {
      if (view_.pages[s].key != 0) used.push_back(s);
    }
    return used;
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
  mutable int copies_ = 0;
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

// A summary no lane could have written (its page has no key a lane would
// take) is not decoded as a footprint: the launch keeps its inferred one.
TEST(FootprintTable, ASummaryNamingAnImpossiblePageIsNotAMeasurement) {
  host_table t(4);
  record_span(t.view(), heap, 8, footprint_kind::read);
  ASSERT_EQ(t.used_slots().size(), 1u);
  t.view().pages[t.used_slots()[0]].key = key_of(max_page + 1, footprint_kind::read);
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

// Note [What a page needs, beside its key]: pages whole, partly covered as
// one run, fragmented and untouched by one kind, in every kind, recorded in
// a random order, decode to what a byte-by-byte reference says.
TEST(FootprintTable, MixedPagesDecodeAsAByteByByteReference) {
  host_table t(1024);
  constexpr std::uint64_t pages = 24;
  std::vector<std::set<std::uint64_t>> bytes(kind_count);
  std::vector<std::pair<std::uint64_t, std::uint32_t>> spans;  // offset, length
  std::mt19937 rng(7);
  for (std::uint64_t page = 0; page < pages; ++page) {
    switch (page % 4) {
      case 0: spans.emplace_back(page * page_bytes, page_bytes); break;  // whole
      case 1: spans.emplace_back(page * page_bytes + 100, 900); break;   // one run
      case 2:  // fragmented
        for (std::uint32_t i = 0; i < 16; ++i) spans.emplace_back(page * page_bytes + 256 * i, 8);
        break;
      case 3: break;  // untouched by this kind
    }
  }
  std::vector<std::pair<std::uint64_t, footprint_kind>> order;
  for (std::uint32_t kind = 0; kind < kind_count; ++kind) {
    for (const auto& [offset, length] : spans) {
      // Each kind shifted by a page, so that kinds share some pages.
      const std::uint64_t at = offset + kind * page_bytes;
      for (std::uint32_t b = 0; b < length; ++b) bytes[kind].insert(heap + at + b);
      order.emplace_back(at << 16 | length, static_cast<footprint_kind>(kind));
    }
  }
  std::shuffle(order.begin(), order.end(), rng);
  for (const auto& [packed, kind] : order) {
    record_span(t.view(), heap + (packed >> 16), static_cast<std::uint32_t>(packed & 0xffff), kind);
  }
  std::vector<measured_interval> expected;
  for (std::uint32_t kind = 0; kind < kind_count; ++kind) {
    for (const std::uint64_t b : bytes[kind]) {
      if (!expected.empty() && expected.back().kind == static_cast<footprint_kind>(kind) &&
          expected.back().end == b) {
        ++expected.back().end;
      } else {
        expected.push_back({b, b + 1, static_cast<footprint_kind>(kind)});
      }
    }
  }
  const auto d = t.decode();
  EXPECT_TRUE(d.complete);
  EXPECT_EQ(d.fragmented_pages, 3u * pages / 4);
  EXPECT_EQ(d.intervals, expected);
}

// Note [Runs found a word at a time]: the runs of a fragmented page's
// bitmap, found a word at a time, are those a bit at a time finds, for
// sparse and dense bitmaps, runs across words and to the page's end.
TEST(FootprintTable, FragmentedPageRunsMatchABitByBitReference) {
  std::mt19937 rng(11);
  constexpr std::uint64_t page = 0x1234;
  for (const std::uint32_t percent : {1u, 10u, 50u, 90u, 99u}) {
    for (int round = 0; round < 40; ++round) {
      std::vector<std::uint32_t> bits(words_per_bitmap, 0);
      // Runs of random lengths with gaps, so that both cross words.
      std::uint32_t byte = rng() % 64;
      while (byte < page_bytes) {
        const bool set = rng() % 100 < percent;
        const std::uint32_t length = 1 + rng() % (rng() % 4 == 0 ? 200 : 9);
        for (std::uint32_t b = byte; b < std::min(byte + length, page_bytes); ++b) {
          if (set) bits[b / bits_per_word] |= 1u << (b % bits_per_word);
        }
        byte += length;
      }
      if (round % 5 == 0) bits.back() |= 0x80000000u;  // a run to the page's end
      if (round % 7 == 0) bits[3] = ~0u;                // a whole word
      std::vector<measured_interval> expected;
      std::uint32_t bytes = 0;
      for (std::uint32_t b = 0; b < page_bytes; ++b) {
        if (((bits[b / bits_per_word] >> (b % bits_per_word)) & 1u) == 0) continue;
        ++bytes;
        const std::uint64_t at = (page << page_shift) + b;
        if (!expected.empty() && expected.back().end == at) {
          ++expected.back().end;
        } else {
          expected.push_back({at, at + 1, footprint_kind::write});
        }
      }
      if (expected.size() < 2) continue;  // one run needs no bitmap
      page_summary summary;
      summary.key = key_of(page, footprint_kind::write);
      const std::uint64_t page_base = page << page_shift;
      summary.first = page_bytes - static_cast<std::uint32_t>(expected.front().begin - page_base);
      summary.end = static_cast<std::uint32_t>(expected.back().end - page_base);
      summary.bytes = bytes;
      std::vector<measured_interval> runs;
      EXPECT_TRUE(page_intervals(summary, bits.data(), runs));
      EXPECT_EQ(runs, expected) << percent << "% set, round " << round;
    }
  }
}

// Note [A footprint too fragmented to use]: past the budget of runs the
// decode stops (no more bitmaps read) and the launch is not a measurement;
// within it, the same table decodes exactly.
TEST(FootprintTable, AFootprintWithMoreRunsThanTheBudgetIsNotAMeasurement) {
  host_table t(1024);
  constexpr std::uint32_t pages = 256;
  constexpr std::uint32_t runs_per_page = 8;
  for (std::uint32_t page = 0; page < pages; ++page) {
    for (std::uint32_t r = 0; r < runs_per_page; ++r) {
      record_span(t.view(), heap + page * page_bytes + r * 512, 4, footprint_kind::read);
    }
  }
  const auto exact = t.decode(16);
  EXPECT_TRUE(exact.complete);
  EXPECT_FALSE(exact.too_fragmented);
  EXPECT_EQ(exact.intervals.size(), std::size_t{pages} * runs_per_page);
  const int copies_for_all = t.copies();
  const auto over = t.decode(16, 100);
  EXPECT_FALSE(over.complete);
  EXPECT_TRUE(over.too_fragmented);
  EXPECT_TRUE(over.intervals.empty());
  EXPECT_LT(t.copies(), copies_for_all / 4);
  const auto at_budget = t.decode(16, std::size_t{pages} * runs_per_page);
  EXPECT_TRUE(at_budget.complete);
  EXPECT_EQ(at_budget.intervals, exact.intervals);
}

// Note [Decoded on a thread of its own]: every copy in the first half, none
// in the second, and the two halves give what one decode does.
TEST(FootprintTable, FetchThenFinishIsTheWholeDecodeAndFinishCopiesNothing) {
  host_table t(64);
  record_span(t.view(), heap, 3 * page_bytes, footprint_kind::read);
  for (std::uint64_t i = 0; i < 64; ++i) record_span(t.view(), heap + 8 * page_bytes + 16 * i, 4, footprint_kind::write);
  const decoded_footprint whole = t.decode();
  int copies = 0;
  const auto fetch = [&](void* dst, std::uint64_t src, std::size_t n) {
    ++copies;
    std::memcpy(dst, reinterpret_cast<const void*>(src), n);
    return true;
  };
  decode_scratch scratch;
  decoded_footprint d = fetch_footprint(t.layout(), t.base(), fetch, scratch);
  EXPECT_EQ(copies, 2);  // the summaries, one window of bitmaps
  EXPECT_TRUE(d.intervals.empty());
  EXPECT_EQ(d.pages, whole.pages);
  EXPECT_EQ(d.fragmented_pages, 1u);
  finish_footprint(scratch, d);
  EXPECT_EQ(copies, 2);
  EXPECT_EQ(d.intervals, whole.intervals);
  EXPECT_EQ(d.bytes_read_back, whole.bytes_read_back);
  EXPECT_EQ(d.complete, whole.complete);
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
  // The capacity's keys; every later page found no free slot, and only the
  // first of them counted (one word, not one add per access).
  EXPECT_EQ(t.used_slots().size(), 2u);
  EXPECT_EQ(t.view().counters->overflow, 1u);
  // A full table takes no new page; a page it has still records (Note [No
  // word every access reads]): its footprint is incomplete anyway.
  record_span(t.view(), heap + 8, 4, footprint_kind::read);
  const std::uint32_t read_slot = slot_to_record(t.view(), heap >> page_shift, footprint_kind::read);
  ASSERT_NE(read_slot, slot_overflowed);
  EXPECT_EQ(t.view().pages[read_slot].bytes, 8u);
  record_span(t.view(), heap + 60 * page_bytes, 4, footprint_kind::read);
  EXPECT_EQ(t.used_slots().size(), 2u);
  EXPECT_EQ(t.view().counters->overflow, 1u);
  EXPECT_FALSE(t.decode().complete);
}

// Note [Pages inserted without asking]: a launch that overflowed before
// still takes the free slot it finds, without reading the counter, and
// stays incomplete.
TEST(FootprintTable, AnOverflowedLaunchStillTakesAFreeSlotAndStaysIncomplete) {
  host_table t(64);
  record_span(t.view(), heap, 4, footprint_kind::read);
  t.view().counters->overflow = 1;  // as an earlier access's probing would
  const std::uint32_t slot =
      slot_to_record(t.view(), (heap >> page_shift) + 5, footprint_kind::write);
  ASSERT_NE(slot, slot_overflowed);
  EXPECT_EQ(t.used_slots().size(), 2u);
  EXPECT_EQ(t.view().counters->overflow, 1u);
  EXPECT_FALSE(t.decode().complete);
}

// Pages (read) whose keys all hash to page 0's main bucket, `n` + 1 of
// them; the first `n` are recorded, each taking the next bucket from
// there.
std::vector<std::uint64_t> fill_from_home(const table_view& t, std::uint32_t n) {
  const std::uint32_t home = page_hash(key_of(0, footprint_kind::read)) & t.slot_mask;
  std::vector<std::uint64_t> colliding;
  for (std::uint64_t page = 0; colliding.size() <= n; ++page) {
    if ((page_hash(key_of(page, footprint_kind::read)) & t.slot_mask) == home) {
      colliding.push_back(page);
    }
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    EXPECT_EQ(slot_to_record(t, colliding[i], footprint_kind::read), (home + i) & t.slot_mask);
  }
  return colliding;
}

// Note [The slot is the bucket]: a key whose slot and every free slot lie
// more than max_probes slots past its first overflows the launch, even
// with free slots elsewhere, so probing stays bounded.
TEST(FootprintTable, ProbingStopsAfterMaxProbesSlots) {
  host_table t(256);
  const std::uint32_t home = page_hash(key_of(0, footprint_kind::read)) & t.view().slot_mask;
  const std::vector<std::uint64_t> colliding = fill_from_home(t.view(), max_probes);
  EXPECT_EQ(t.view().counters->overflow, 0u);
  EXPECT_EQ(slot_to_record(t.view(), colliding[max_probes], footprint_kind::read),
            slot_overflowed);
  EXPECT_EQ(t.view().counters->overflow, 1u);
  EXPECT_EQ(t.used_slots().size(), std::size_t{max_probes});
  // The keys already in place are still found, the last one 63 slots on.
  EXPECT_EQ(slot_to_record(t.view(), colliding[max_probes - 1], footprint_kind::read),
            (home + max_probes - 1) & t.view().slot_mask);
}

// Note [The room to grow is read only when used]: with a spill region, a
// key whose first main_probes main buckets are all taken goes on to the
// spill region, though free main slots lie further on; keys already in
// place are still found where they are.
TEST(FootprintTable, AKeyThatFindsNoRoomInMainProbesBucketsSpills) {
  host_table t(256, 256);
  const std::uint32_t home = page_hash(key_of(0, footprint_kind::read)) & t.view().slot_mask;
  const std::vector<std::uint64_t> colliding = fill_from_home(t.view(), main_probes);
  EXPECT_EQ(t.view().counters->spilled, 0u);
  const std::uint64_t last = colliding[main_probes];
  const std::uint32_t spilled =
      256 + (page_hash(key_of(last, footprint_kind::read)) & t.view().spill_mask);
  EXPECT_EQ(slot_to_record(t.view(), last, footprint_kind::read), spilled);
  EXPECT_EQ(t.view().counters->spilled, 1u);
  EXPECT_EQ(t.view().counters->overflow, 0u);
  EXPECT_EQ(slot_to_record(t.view(), last, footprint_kind::read), spilled);
  EXPECT_EQ(slot_to_record(t.view(), colliding[0], footprint_kind::read), home);
  const auto d = t.decode();
  EXPECT_TRUE(d.complete);
  EXPECT_TRUE(d.spilled);
  EXPECT_EQ(d.pages, main_probes + 1);
}

// A launch within its main region reads back the counters and the main
// summaries in one copy, never the spill region's; one that spilled reads
// those too and decodes every page, its bitmaps included.
TEST(FootprintTable, TheSpillRegionIsReadBackOnlyWhenAKeyTookOneOfItsSlots) {
  host_table t(64, 1024);
  for (int p = 0; p < 10; ++p) record_span(t.view(), heap + p * page_bytes, 8, footprint_kind::read);
  const std::size_t main = sizeof(table_counters) + 64 * sizeof(page_summary);
  auto d = t.decode();
  EXPECT_EQ(d.bytes_read_back, main);
  EXPECT_EQ(t.copies(), 1);
  EXPECT_FALSE(d.spilled);
  EXPECT_EQ(d.intervals.size(), 10u);
  std::vector<measured_interval> expected;
  t.clear();
  for (std::uint64_t p = 0; p < 200; ++p) {
    const std::uint64_t page = heap + 2 * p * page_bytes;
    record_span(t.view(), page, 8, footprint_kind::write);
    expected.push_back({page, page + 8, footprint_kind::write});
  }
  record_span(t.view(), heap + 64, 8, footprint_kind::write);  // page 0: two runs
  expected.insert(expected.begin() + 1, {heap + 64, heap + 72, footprint_kind::write});
  d = t.decode();
  EXPECT_TRUE(d.complete);
  EXPECT_TRUE(d.spilled);
  EXPECT_EQ(d.pages, 200u);
  EXPECT_EQ(d.fragmented_pages, 1u);
  EXPECT_EQ(d.intervals, expected);
  EXPECT_EQ(d.bytes_read_back,
            main + 1024 * sizeof(page_summary) + words_per_bitmap * sizeof(std::uint32_t));
  EXPECT_EQ(t.copies(), 3);
}

// A launch that fills both regions overflows: not a measurement.
TEST(FootprintTable, ALaunchThatFillsBothRegionsOverflows) {
  host_table t(16, 32);
  for (int p = 0; p < 64; ++p) record_span(t.view(), heap + p * page_bytes, 8, footprint_kind::read);
  EXPECT_EQ(t.view().counters->overflow, 1u);
  EXPECT_EQ(t.used_slots().size(), 48u);
  EXPECT_FALSE(t.decode().complete);
}

// Threads that reach one new page at once, like warps of a streaming
// kernel, all get the slot of the one whose CAS took it.
TEST(FootprintTable, LanesInsertingOnePageAtOnceShareItsSlot) {
  host_table t(64);
  constexpr int threads = 8;
  constexpr std::uint64_t pages = 16;
  std::vector<std::vector<std::uint32_t>> slots(threads, std::vector<std::uint32_t>(pages));
  std::vector<std::thread> pool;
  for (int k = 0; k < threads; ++k) {
    pool.emplace_back([&, k] {
      for (std::uint64_t p = 0; p < pages; ++p) {
        slots[k][p] = slot_to_record(t.view(), (heap >> page_shift) + p, footprint_kind::write);
      }
    });
  }
  for (auto& th : pool) th.join();
  for (int k = 1; k < threads; ++k) EXPECT_EQ(slots[k], slots[0]);
  const std::set<std::uint32_t> distinct(slots[0].begin(), slots[0].end());
  EXPECT_EQ(distinct.size(), pages);
  EXPECT_EQ(distinct.count(slot_overflowed), 0u);
  EXPECT_EQ(t.used_slots().size(), pages);
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

// Threads race on the same pages of `t`, like warps of one kernel; the
// decoded footprint is exactly the union of what they recorded.
void expect_concurrent_recording_exact(host_table& t) {
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

TEST(FootprintTable, ConcurrentRecordingIsExact) {
  host_table t(256);
  expect_concurrent_recording_exact(t);
}

// 192 keys (64 pages, three kinds) for 64 main slots: most of them spill
// while other threads probe and insert the same keys.
TEST(FootprintTable, ConcurrentRecordingThatSpillsIsExact) {
  host_table t(64, 256);
  expect_concurrent_recording_exact(t);
  EXPECT_EQ(t.view().counters->spilled, 1u);
  EXPECT_EQ(t.view().counters->overflow, 0u);
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
  std::uint32_t bytes = 0;
  for (const std::uint32_t slot : t.used_slots()) bytes += t.view().pages[slot].bytes;
  EXPECT_EQ(bytes, 544u + 544u);
}

TEST(FootprintTable, AnOverflowedLaunchHandsOutNoSlot) {
  host_table t(1);
  ASSERT_NE(slot_to_record(t.view(), heap >> page_shift, footprint_kind::read), slot_overflowed);
  EXPECT_EQ(slot_to_record(t.view(), (heap >> page_shift) + 1, footprint_kind::read),
            slot_overflowed);
  EXPECT_EQ(t.view().counters->overflow, 1u);
  // From then on a new page is refused, without counting again; the page
  // the table holds keeps its slot (a hit reads only its slot's key: Note
  // [No word every access reads]).
  EXPECT_EQ(slot_to_record(t.view(), (heap >> page_shift) + 2, footprint_kind::read),
            slot_overflowed);
  EXPECT_EQ(t.view().counters->overflow, 1u);
  EXPECT_EQ(slot_to_record(t.view(), heap >> page_shift, footprint_kind::read), 0u);
  EXPECT_EQ(t.view().counters->overflow, 1u);
}

// Note [The slot is the bucket]: a page whose key decoding cannot pack
// would alias another page, so it makes the launch incomplete instead.
TEST(FootprintTable, APageBeyondTheKeyBitsIsAnOverflowNotAnotherPage) {
  host_table t(4);
  const std::uint64_t beyond = std::uint64_t{1} << 50;
  record_span(t.view(), beyond - page_bytes, 8, footprint_kind::atomic);  // the last page
  EXPECT_EQ(t.used_slots().size(), 1u);
  EXPECT_EQ(t.view().counters->overflow, 0u);
  record_span(t.view(), beyond + 64, 8, footprint_kind::write);
  EXPECT_EQ(t.view().counters->overflow, 1u);
  EXPECT_EQ(t.used_slots().size(), 1u);
  EXPECT_FALSE(t.decode().complete);
}

// A slot is where its key hashed, or the first free slot after it: a hit
// in the first is one load.
TEST(FootprintTable, APageTakesTheSlotItsKeyHashesTo) {
  host_table t(64);
  const std::uint64_t page = heap >> page_shift;
  const std::uint64_t key = key_of(page, footprint_kind::read);
  const std::uint32_t slot = slot_to_record(t.view(), page, footprint_kind::read);
  EXPECT_EQ(slot, page_hash(key) & t.view().slot_mask);
  EXPECT_EQ(t.view().pages[slot].key, key);
  EXPECT_EQ(page_of_key(key), page);
  EXPECT_EQ(kind_of_key(key), 0u);
  EXPECT_EQ(slot_to_record(t.view(), page, footprint_kind::read), slot);
  EXPECT_NE(slot_to_record(t.view(), page, footprint_kind::write), slot);
}

// The counters and every summary in one copy; bitmaps only from the first
// fragmented slot to the last.
TEST(FootprintTable, ReadsBackTheSummariesInOneCopyAndBitmapsOnlyWhenNeeded) {
  host_table t(64);
  for (int p = 0; p < 10; ++p) record_span(t.view(), heap + p * page_bytes, 8, footprint_kind::read);
  const std::size_t summaries = sizeof(table_counters) + 64 * sizeof(page_summary);
  EXPECT_EQ(t.decode().bytes_read_back, summaries);
  record_span(t.view(), heap + 100, 8, footprint_kind::read);  // page 0: two runs now
  auto d = t.decode();
  EXPECT_EQ(d.bytes_read_back, summaries + words_per_bitmap * 4);
  EXPECT_EQ(d.fragmented_pages, 1u);
  EXPECT_EQ(d.intervals.size(), 11u);
  EXPECT_EQ(d.intervals[1], (measured_interval{heap + 100, heap + 108, footprint_kind::read}));
  // Two fragmented pages: one copy from the lower slot to the higher.
  record_span(t.view(), heap + 9 * page_bytes + 100, 8, footprint_kind::read);
  const std::uint32_t a = slot_to_record(t.view(), heap >> page_shift, footprint_kind::read);
  const std::uint32_t b =
      slot_to_record(t.view(), (heap >> page_shift) + 9, footprint_kind::read);
  const std::uint32_t span = (a > b ? a - b : b - a) + 1;
  d = t.decode();
  EXPECT_EQ(d.bytes_read_back, summaries + span * words_per_bitmap * 4);
  EXPECT_EQ(d.fragmented_pages, 2u);
  EXPECT_EQ(d.intervals.size(), 12u);
}

// Note [Bitmaps read window by window]: fragmented slots far apart are
// read a window at a time, not in one copy of everything between them,
// and each slot keeps its own runs.
TEST(FootprintTable, FragmentedSlotsFarApartAreReadWindowByWindow) {
  host_table t(1024);
  std::vector<std::uint32_t> fragmented;
  std::vector<measured_interval> expected;
  for (std::uint64_t p = 0; p < 64; ++p) {
    const std::uint64_t page = heap + p * page_bytes;
    record_span(t.view(), page + 8, 8, footprint_kind::write);
    record_span(t.view(), page + 64, 8, footprint_kind::write);
    expected.push_back({page + 8, page + 16, footprint_kind::write});
    expected.push_back({page + 64, page + 72, footprint_kind::write});
    fragmented.push_back(slot_to_record(t.view(), page >> page_shift, footprint_kind::write));
  }
  std::sort(fragmented.begin(), fragmented.end());
  constexpr std::uint32_t window = 16;
  std::size_t windows = 0;
  std::size_t bitmaps = 0;
  for (std::size_t i = 0; i < fragmented.size();) {
    std::size_t j = i;
    while (j < fragmented.size() && fragmented[j] - fragmented[i] < window) ++j;
    ++windows;
    bitmaps += fragmented[j - 1] - fragmented[i] + 1;
    i = j;
  }
  ASSERT_LT(window, bitmap_gap_slots);  // only the window cuts here
  const auto d = t.decode(window);
  EXPECT_EQ(d.intervals, expected);
  EXPECT_EQ(d.fragmented_pages, 64u);
  EXPECT_EQ(t.copies(), static_cast<int>(1 + windows));
  EXPECT_EQ(d.bytes_read_back, sizeof(table_counters) + 1024 * sizeof(page_summary) +
                                   bitmaps * words_per_bitmap * 4);
  // The default window holds the whole table: 64 slots among 1,024 leave no
  // gap of more than bitmap_gap_slots here, so one copy of the bitmaps.
  ASSERT_LE(fragmented.back() - fragmented.front(), 1024u);
  bool gap = false;
  for (std::size_t i = 1; i < fragmented.size(); ++i) {
    gap = gap || fragmented[i] - fragmented[i - 1] > bitmap_gap_slots;
  }
  const auto whole = t.decode();
  EXPECT_EQ(whole.intervals, expected);
  if (!gap) {
    EXPECT_EQ(t.copies(), 2);
  }
}

// A few fragmented slots spread over a large table: each gap of more than
// bitmap_gap_slots starts a copy, so the bitmaps between them stay on the
// device (cuSolverRf's launches read back 11.7 MB each for about 41 pages).
TEST(FootprintTable, FragmentedSlotsAcrossLongGapsAreReadApart) {
  constexpr std::uint32_t capacity = 1u << 16;
  host_table t(capacity);
  std::vector<std::uint32_t> fragmented;
  std::vector<measured_interval> expected;
  for (std::uint64_t p = 0; p < 8; ++p) {
    const std::uint64_t page = heap + p * 4096 * page_bytes;
    record_span(t.view(), page + 8, 8, footprint_kind::read);
    record_span(t.view(), page + 64, 8, footprint_kind::read);
    expected.push_back({page + 8, page + 16, footprint_kind::read});
    expected.push_back({page + 64, page + 72, footprint_kind::read});
    fragmented.push_back(slot_to_record(t.view(), page >> page_shift, footprint_kind::read));
  }
  std::sort(fragmented.begin(), fragmented.end());
  std::size_t copies = 1, bitmaps = 1;  // the summaries; the first slot's bitmap
  for (std::size_t i = 1; i < fragmented.size(); ++i) {
    const std::uint32_t gap = fragmented[i] - fragmented[i - 1];
    if (gap > bitmap_gap_slots) {
      ++copies;
      ++bitmaps;
    } else {
      bitmaps += gap;
    }
  }
  ++copies;  // the first group's copy
  std::sort(expected.begin(), expected.end(), [](const auto& a, const auto& b) {
    return a.begin < b.begin;
  });
  const auto d = t.decode();
  EXPECT_EQ(d.intervals, expected);
  EXPECT_EQ(t.copies(), static_cast<int>(copies));
  EXPECT_EQ(d.bytes_read_back, sizeof(table_counters) + capacity * sizeof(page_summary) +
                                   bitmaps * words_per_bitmap * 4);
  // Far less than from the first fragmented slot to the last.
  EXPECT_LT(bitmaps * 4, std::size_t{fragmented.back() - fragmented.front() + 1});
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
