#include "sanitizer/engine/access_history.h"

#include <gtest/gtest.h>

#include <vector>

namespace streamsan {
namespace {

// Contexts are slots 0, 1, 2; each test builds the clocks it needs.
access_entry entry(context_slot slot, std::uint64_t clock, access_mode mode,
                   std::uint64_t seq) {
  access_entry e;
  e.when = epoch(slot, clock);
  e.seq = seq;
  e.mode = mode;
  return e;
}

vector_clock clock_of(context_slot slot, std::uint64_t own) {
  vector_clock c;
  c.set(slot, own);
  return c;
}

struct history_fixture : ::testing::Test {
  access_history history;
  std::vector<history_conflict> conflicts;

  void access(std::uint64_t begin, std::uint64_t end, const access_entry& e,
              const vector_clock& clock) {
    history.apply(begin, end, e, clock, conflicts);
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> bounds() const {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    for (const auto& s : history.segments()) out.emplace_back(s.begin, s.end);
    return out;
  }
};

using AccessHistory = history_fixture;
using Bounds = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

TEST_F(AccessHistory, FirstAccessCreatesOneSegment) {
  access(0, 100, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  EXPECT_TRUE(conflicts.empty());
  EXPECT_EQ(bounds(), (Bounds{{0, 100}}));
}

TEST_F(AccessHistory, SameContextIsAlwaysOrdered) {
  access(0, 100, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  access(0, 100, entry(0, 2, access_mode::read, 2), clock_of(0, 2));
  access(0, 100, entry(0, 3, access_mode::write, 3), clock_of(0, 3));
  EXPECT_TRUE(conflicts.empty());
}

TEST_F(AccessHistory, UnorderedWriteAfterWriteConflicts) {
  access(0, 100, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  access(0, 100, entry(1, 1, access_mode::write, 2), clock_of(1, 1));
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].kind, hazard::write_after_write);
  EXPECT_EQ(conflicts[0].previous.seq, 1u);
  EXPECT_EQ(conflicts[0].begin, 0u);
  EXPECT_EQ(conflicts[0].end, 100u);
}

TEST_F(AccessHistory, OrderedWriteDoesNotConflict) {
  access(0, 100, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  vector_clock after = clock_of(1, 1);
  after.set(0, 1);  // context 1 joined context 0 after its write
  access(0, 100, entry(1, 1, access_mode::write, 2), after);
  EXPECT_TRUE(conflicts.empty());
}

TEST_F(AccessHistory, ReadAfterUnorderedWriteConflicts) {
  access(0, 100, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  access(10, 20, entry(1, 1, access_mode::read, 2), clock_of(1, 1));
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].kind, hazard::read_after_write);
  EXPECT_EQ(conflicts[0].begin, 10u);
  EXPECT_EQ(conflicts[0].end, 20u);
}

TEST_F(AccessHistory, ReadsNeverConflictWithReads) {
  access(0, 100, entry(0, 1, access_mode::read, 1), clock_of(0, 1));
  access(0, 100, entry(1, 1, access_mode::read, 2), clock_of(1, 1));
  access(0, 100, entry(2, 1, access_mode::read, 3), clock_of(2, 1));
  EXPECT_TRUE(conflicts.empty());
  EXPECT_EQ(history.read_count(), 3u);
}

TEST_F(AccessHistory, WriteAfterUnorderedReadsConflictsWithEachRead) {
  access(0, 100, entry(0, 1, access_mode::read, 1), clock_of(0, 1));
  access(0, 100, entry(1, 1, access_mode::read, 2), clock_of(1, 1));
  vector_clock writer = clock_of(2, 1);
  writer.set(0, 1);  // ordered after context 0's read only
  access(0, 100, entry(2, 1, access_mode::write, 3), writer);
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].kind, hazard::write_after_read);
  EXPECT_EQ(conflicts[0].previous.seq, 2u);
  EXPECT_EQ(history.read_count(), 0u);  // a write clears the read set
}

TEST_F(AccessHistory, DisjointHalvesDoNotConflict) {
  access(0, 50, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  access(50, 100, entry(1, 1, access_mode::write, 2), clock_of(1, 1));
  EXPECT_TRUE(conflicts.empty());
  EXPECT_EQ(bounds(), (Bounds{{0, 50}, {50, 100}}));
}

TEST_F(AccessHistory, PartialOverlapConflictsOnTheOverlapOnly) {
  access(0, 100, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  access(60, 160, entry(1, 1, access_mode::write, 2), clock_of(1, 1));
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].begin, 60u);
  EXPECT_EQ(conflicts[0].end, 100u);
  EXPECT_EQ(bounds(), (Bounds{{0, 60}, {60, 160}}));
  EXPECT_EQ(history.segments()[0].write.seq, 1u);
  EXPECT_EQ(history.segments()[1].write.seq, 2u);
}

TEST_F(AccessHistory, ReadInsideAWriteSplitsItInThree) {
  access(0, 100, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  access(40, 60, entry(0, 2, access_mode::read, 2), clock_of(0, 2));
  EXPECT_EQ(bounds(), (Bounds{{0, 40}, {40, 60}, {60, 100}}));
  EXPECT_EQ(history.segments()[1].reads.size(), 1u);
  EXPECT_TRUE(history.segments()[0].reads.empty());
}

TEST_F(AccessHistory, WriteOverSplitSegmentsMergesThemBack) {
  access(0, 100, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  access(40, 60, entry(0, 2, access_mode::read, 2), clock_of(0, 2));
  access(0, 100, entry(0, 3, access_mode::write, 3), clock_of(0, 3));
  EXPECT_EQ(bounds(), (Bounds{{0, 100}}));
}

TEST_F(AccessHistory, ConflictAcrossSplitPiecesIsReportedOnceWithItsHull) {
  access(0, 100, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  access(40, 60, entry(0, 2, access_mode::read, 2), clock_of(0, 2));
  access(0, 100, entry(1, 1, access_mode::write, 3), clock_of(1, 1));
  ASSERT_EQ(conflicts.size(), 2u);
  EXPECT_EQ(conflicts[0].kind, hazard::write_after_write);
  EXPECT_EQ(conflicts[0].begin, 0u);
  EXPECT_EQ(conflicts[0].end, 100u);
  EXPECT_EQ(conflicts[1].kind, hazard::write_after_read);
  EXPECT_EQ(conflicts[1].begin, 40u);
  EXPECT_EQ(conflicts[1].end, 60u);
}

TEST_F(AccessHistory, GapsBetweenSegmentsAreFilled) {
  access(0, 10, entry(0, 1, access_mode::read, 1), clock_of(0, 1));
  access(20, 30, entry(0, 2, access_mode::read, 2), clock_of(0, 2));
  access(5, 25, entry(0, 3, access_mode::read, 3), clock_of(0, 3));
  // The new read dropped the earlier reads of its own context where it
  // covered them, so the pieces it touched all hold just it.
  EXPECT_EQ(bounds(), (Bounds{{0, 5}, {5, 25}, {25, 30}}));
  EXPECT_EQ(history.segments()[1].reads.size(), 1u);
  EXPECT_EQ(history.segments()[1].reads[0].seq, 3u);
}

TEST_F(AccessHistory, ReadSetKeepsOneReadPerUnorderedContext) {
  for (std::uint64_t t = 1; t <= 50; ++t) {
    access(0, 64, entry(0, t, access_mode::read, t), clock_of(0, t));
    access(0, 64, entry(1, t, access_mode::read, 100 + t), clock_of(1, t));
  }
  EXPECT_TRUE(conflicts.empty());
  ASSERT_EQ(history.segments().size(), 1u);
  EXPECT_EQ(history.read_count(), 2u);
}

TEST_F(AccessHistory, SegmentCountStaysFlatUnderRepeatedPartialAccesses) {
  for (std::uint64_t t = 1; t <= 1000; ++t) {
    const std::uint64_t b = (t * 37) % 900;
    access(b, b + 50, entry(0, 2 * t, access_mode::read, 2 * t), clock_of(0, 2 * t));
    access(0, 1000, entry(0, 2 * t + 1, access_mode::write, 2 * t + 1), clock_of(0, 2 * t + 1));
  }
  EXPECT_EQ(bounds(), (Bounds{{0, 1000}}));
}

TEST_F(AccessHistory, FindUnorderedReportsAccessesTheClockDoesNotCover) {
  access(0, 50, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  access(50, 100, entry(1, 1, access_mode::read, 2), clock_of(1, 1));
  vector_clock freer;
  freer.set(0, 1);
  history.find_unordered(0, 100, freer, conflicts);
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].kind, hazard::write_after_read);
  EXPECT_EQ(conflicts[0].previous.seq, 2u);
  EXPECT_EQ(conflicts[0].begin, 50u);
  EXPECT_EQ(conflicts[0].end, 100u);
}

TEST_F(AccessHistory, EmptyRangeIsIgnored) {
  access(10, 10, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  EXPECT_TRUE(history.segments().empty());
}

TEST_F(AccessHistory, ClearReleasesEverything) {
  access(0, 10, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  history.clear();
  EXPECT_TRUE(history.segments().empty());
  EXPECT_EQ(history.bytes_held(), 0u);
}

}  // namespace
}  // namespace streamsan
