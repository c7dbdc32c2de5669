#include "sanitizer/engine/access_history.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "tests/engine/engine_driver.h"

namespace streamsan {
namespace {

using testing::all_access_modes;

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

// ---- atomics (Note [Atomic access sets]) ----

TEST_F(AccessHistory, AtomicsFromTwoContextsDoNotConflict) {
  access(0, 4, entry(0, 1, access_mode::atomic, 1), clock_of(0, 1));
  access(0, 4, entry(1, 1, access_mode::atomic, 2), clock_of(1, 1));
  EXPECT_TRUE(conflicts.empty());
  EXPECT_EQ(history.atomic_count(), 2u);
}

TEST_F(AccessHistory, AtomicAfterUnorderedPlainWriteIsWriteAfterWrite) {
  access(0, 4, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  access(0, 4, entry(1, 1, access_mode::atomic, 2), clock_of(1, 1));
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].kind, hazard::write_after_write);
  EXPECT_EQ(conflicts[0].previous.seq, 1u);
}

TEST_F(AccessHistory, AtomicAfterUnorderedReadIsWriteAfterRead) {
  access(0, 4, entry(0, 1, access_mode::read, 1), clock_of(0, 1));
  access(0, 4, entry(1, 1, access_mode::atomic, 2), clock_of(1, 1));
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].kind, hazard::write_after_read);
}

TEST_F(AccessHistory, ReadAfterUnorderedAtomicIsReadAfterWrite) {
  access(0, 4, entry(0, 1, access_mode::atomic, 1), clock_of(0, 1));
  access(0, 4, entry(1, 1, access_mode::read, 2), clock_of(1, 1));
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].kind, hazard::read_after_write);
  EXPECT_EQ(conflicts[0].previous.mode, access_mode::atomic);
}

TEST_F(AccessHistory, AnAtomicKeepsTheLastWriteAndTheReads) {
  access(0, 4, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  access(0, 4, entry(0, 2, access_mode::read, 2), clock_of(0, 2));
  access(0, 4, entry(0, 3, access_mode::atomic, 3), clock_of(0, 3));
  ASSERT_EQ(history.segments().size(), 1u);
  EXPECT_EQ(history.segments()[0].write.seq, 1u);
  EXPECT_EQ(history.read_count(), 1u);
  EXPECT_EQ(history.atomic_count(), 1u);
  // A write from another context conflicts with all three.
  access(0, 4, entry(1, 1, access_mode::write, 4), clock_of(1, 1));
  ASSERT_EQ(conflicts.size(), 3u);
  EXPECT_EQ(conflicts[0].kind, hazard::write_after_write);  // the write
  EXPECT_EQ(conflicts[1].kind, hazard::write_after_read);   // the read
  EXPECT_EQ(conflicts[2].kind, hazard::write_after_write);  // the atomic
  EXPECT_EQ(conflicts[2].previous.seq, 3u);
}

TEST_F(AccessHistory, AWriteClearsTheAtomics) {
  access(0, 4, entry(0, 1, access_mode::atomic, 1), clock_of(0, 1));
  access(0, 4, entry(0, 2, access_mode::write, 2), clock_of(0, 2));
  EXPECT_EQ(history.atomic_count(), 0u);
  EXPECT_EQ(history.segments()[0].write.seq, 2u);
}

TEST_F(AccessHistory, AtomicSetKeepsOneAtomicPerUnorderedContext) {
  for (std::uint64_t t = 1; t <= 50; ++t) {
    access(0, 4, entry(0, t, access_mode::atomic, t), clock_of(0, t));
    access(0, 4, entry(1, t, access_mode::atomic, 100 + t), clock_of(1, t));
  }
  EXPECT_TRUE(conflicts.empty());
  EXPECT_EQ(history.atomic_count(), 2u);
}

TEST_F(AccessHistory, AMixedModeIsReportedOncePerHazard) {
  // A read+atomic lives in the read set and in the atomic set; a write
  // meets it twice but reports it once (an atomic counts as a write).
  access(0, 4, entry(0, 1, access_mode::read_atomic, 1), clock_of(0, 1));
  EXPECT_EQ(history.read_count(), 1u);
  EXPECT_EQ(history.atomic_count(), 1u);
  access(0, 4, entry(1, 1, access_mode::write, 2), clock_of(1, 1));
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].kind, hazard::write_after_write);
  EXPECT_EQ(conflicts[0].previous.mode, access_mode::read_atomic);
}

TEST_F(AccessHistory, PartialAtomicSplitsSegmentsLikeAReadAndKeepsThePieces) {
  access(0, 100, entry(0, 1, access_mode::write, 1), clock_of(0, 1));
  access(40, 60, entry(0, 2, access_mode::atomic, 2), clock_of(0, 2));
  EXPECT_EQ(bounds(), (Bounds{{0, 40}, {40, 60}, {60, 100}}));
  EXPECT_EQ(history.segments()[1].atomics.size(), 1u);
  EXPECT_EQ(history.segments()[1].write.seq, 1u);
  access(0, 100, entry(1, 1, access_mode::atomic, 3), clock_of(1, 1));
  // The atomic of context 1 conflicts with the write only, on all of it.
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].previous.seq, 1u);
  EXPECT_EQ(conflicts[0].begin, 0u);
  EXPECT_EQ(conflicts[0].end, 100u);
}

TEST_F(AccessHistory, FindUnorderedReportsAtomics) {
  access(0, 4, entry(0, 1, access_mode::atomic, 1), clock_of(0, 1));
  vector_clock freer = clock_of(1, 1);
  history.find_unordered(0, 4, freer, conflicts);
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].kind, hazard::write_after_write);
}

// ---- every pair and triple of modes against conflicts() ----

std::string names(std::initializer_list<access_mode> modes) {
  std::string out;
  for (const auto m : modes) out += (out.empty() ? "" : " then ") + std::string(to_string(m));
  return out;
}

// Two accesses, by two contexts, over the same bytes (the single-segment
// path) or overlapping in part (the splitting path).
TEST(AccessHistoryModes, EveryPairConflictsExactlyWhenTheRuleSaysSo) {
  for (const bool partial : {false, true}) {
    for (const access_mode first : all_access_modes) {
      for (const access_mode second : all_access_modes) {
        for (const bool ordered : {false, true}) {
          access_history history;
          std::vector<history_conflict> out;
          history.apply(0, 64, entry(0, 1, first, 1), clock_of(0, 1), out);
          vector_clock clock = clock_of(1, 1);
          if (ordered) clock.set(0, 1);
          const std::uint64_t begin = partial ? 32 : 0, end = partial ? 96 : 64;
          history.apply(begin, end, entry(1, 1, second, 2), clock, out);
          const bool expected = !ordered && conflicts(second, first);
          SCOPED_TRACE(names({first, second}) + (ordered ? " ordered" : " unordered") +
                       (partial ? " partial" : " exact"));
          ASSERT_EQ(out.size(), expected ? 1u : 0u);
          if (!expected) continue;
          EXPECT_EQ(out[0].kind, hazard_between(second, first));
          EXPECT_EQ(out[0].previous.seq, 1u);
          EXPECT_EQ(out[0].begin, begin);
          EXPECT_EQ(out[0].end, 64u);
        }
      }
    }
  }
}

TEST(AccessHistoryModes, TheRuleIsSymmetricAndTreatsAtomicsAsWritesForHazards) {
  for (const access_mode a : all_access_modes) {
    for (const access_mode b : all_access_modes) {
      EXPECT_EQ(conflicts(a, b), conflicts(b, a)) << names({a, b});
      if (conflicts(a, b)) {
        EXPECT_NE(hazard_between(a, b), hazard::none) << names({a, b});
      }
    }
  }
  EXPECT_FALSE(conflicts(access_mode::atomic, access_mode::atomic));
  EXPECT_FALSE(conflicts(access_mode::read, access_mode::read));
  EXPECT_TRUE(conflicts(access_mode::atomic, access_mode::read));
  EXPECT_EQ(hazard_between(access_mode::atomic, access_mode::read), hazard::write_after_read);
  EXPECT_EQ(hazard_between(access_mode::read, access_mode::atomic), hazard::read_after_write);
}

// Note [Bounded read sets] and [Atomic access sets] drop stored accesses;
// this checks, for every triple of modes and every ordering of two earlier
// accesses p1 (context 0) and p2 (context 1) against a third c (context 2),
// that a conflict is reported iff c conflicts with an earlier access it is
// not ordered after, and that every conflict reported is one. As in
// ThreadSanitizer, once p1 and p2 race (reported then), a write p2 may make
// the history forget p1: only the second half holds there.
TEST(AccessHistoryModes, EveryTripleReportsARaceIffOneExists) {
  for (const bool partial : {false, true}) {
    for (const access_mode m1 : all_access_modes) {
      for (const access_mode m2 : all_access_modes) {
        for (const access_mode m3 : all_access_modes) {
          for (int shape = 0; shape < 8; ++shape) {
            const bool p2_after_p1 = (shape & 1) != 0;
            const bool c_after_p1 = (shape & 2) != 0;
            const bool c_after_p2 = (shape & 4) != 0;
            access_history history;
            std::vector<history_conflict> out;
            history.apply(0, 64, entry(0, 1, m1, 1), clock_of(0, 1), out);
            vector_clock c2 = clock_of(1, 1);
            if (p2_after_p1) c2.set(0, 1);
            history.apply(0, 64, entry(1, 1, m2, 2), c2, out);
            const bool earlier_race = !p2_after_p1 && conflicts(m2, m1);
            EXPECT_EQ(!out.empty(), earlier_race) << names({m1, m2});
            out.clear();
            vector_clock c3 = clock_of(2, 1);
            if (c_after_p2) c3.join(c2);  // transitively after p1 too when p2 is
            if (c_after_p1) c3.set(0, 1);
            const bool sees_p1 = !c3.covers(epoch(0, 1));
            const bool sees_p2 = !c3.covers(epoch(1, 1));
            const std::uint64_t begin = partial ? 16 : 0;
            history.apply(begin, 64, entry(2, 1, m3, 3), c3, out);
            const bool expected =
                (sees_p1 && conflicts(m3, m1)) || (sees_p2 && conflicts(m3, m2));
            SCOPED_TRACE(names({m1, m2, m3}) + " shape " + std::to_string(shape) +
                         (partial ? " partial" : " exact"));
            if (!earlier_race) {
              EXPECT_EQ(!out.empty(), expected);
            }
            for (const auto& c : out) {
              EXPECT_FALSE(c3.covers(c.previous.when));
              EXPECT_TRUE(conflicts(m3, c.previous.mode));
              EXPECT_EQ(c.kind, hazard_between(m3, c.previous.mode));
            }
          }
        }
      }
    }
  }
}

// Note [Many accesses merged in one pass]: for random histories (three
// contexts, every mode, random bounds) and random sorted disjoint batches,
// apply_batch leaves the same state byte for byte, and finds the same
// conflicts per access, as apply() one access at a time.
std::vector<access_history::segment_state> normalized(const access_history& h) {
  std::vector<access_history::segment_state> out;
  for (const auto& s : h.segments()) {
    if (!out.empty() && out.back().end == s.begin && out.back().write == s.write &&
        out.back().reads == s.reads && out.back().atomics == s.atomics) {
      out.back().end = s.end;
    } else {
      out.push_back(s);
    }
  }
  return out;
}

// The same state byte for byte, however the segments are cut.
void expect_same_state(const access_history& expected, const access_history& found) {
  const auto a = normalized(expected), b = normalized(found);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].begin, b[i].begin);
    EXPECT_EQ(a[i].end, b[i].end);
    EXPECT_TRUE(a[i].write == b[i].write && a[i].reads == b[i].reads &&
                a[i].atomics == b[i].atomics)
        << "segment " << i;
  }
}

void expect_same_conflicts(const std::vector<history_conflict>& found,
                           const std::vector<history_conflict>& expected) {
  ASSERT_EQ(found.size(), expected.size());
  for (std::size_t c = 0; c < found.size(); ++c) {
    EXPECT_EQ(found[c].kind, expected[c].kind);
    EXPECT_EQ(found[c].previous, expected[c].previous);
    EXPECT_EQ(found[c].begin, expected[c].begin);
    EXPECT_EQ(found[c].end, expected[c].end);
  }
}

// `n` accesses of random places (below 1,000, up to 120 bytes), modes and
// contexts (0 to 2), each ordered after its own context's.
template <class Pick>
void apply_random_accesses(access_history& h, int n, Pick& pick, std::uint64_t& seq) {
  const auto& modes = all_access_modes;
  std::vector<history_conflict> ignored;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t begin = pick(1000), size = 1 + pick(120);
    const auto slot = static_cast<context_slot>(pick(3));
    h.apply(begin, begin + size, entry(slot, 1 + pick(4), modes[pick(std::size(modes))], seq++),
            clock_of(slot, 5), ignored);
  }
}

// `batch` applied to `batched` at once and to `one_by_one` an access at a
// time, from the same state: the same conflicts for each access, and the
// same state after.
void expect_batch_matches_one_by_one(access_history& one_by_one, access_history& batched,
                                     std::span<const access_history::batch_access> batch,
                                     const vector_clock& clock) {
  std::vector<std::vector<history_conflict>> expected(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    one_by_one.apply(batch[i].begin, batch[i].end, batch[i].entry, clock, expected[i]);
  }
  std::vector<history_conflict> conflicts;
  std::vector<access_history::conflict_slice> slices;
  batched.apply_batch(batch, clock, conflicts, slices);
  std::vector<std::vector<history_conflict>> found(batch.size());
  for (const auto& slice : slices) {
    found[slice.access].assign(conflicts.begin() + static_cast<std::ptrdiff_t>(slice.first),
                               conflicts.begin() + static_cast<std::ptrdiff_t>(slice.last));
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "access " << i);
    ASSERT_NO_FATAL_FAILURE(expect_same_conflicts(found[i], expected[i]));
  }
  expect_same_state(one_by_one, batched);
}

TEST(AccessHistoryBatch, MatchesApplyingOneAccessAtATime) {
  std::mt19937_64 random(20261129);
  const auto& modes = all_access_modes;
  const auto pick = [&](std::uint64_t n) { return random() % n; };
  for (int round = 0; round < 400; ++round) {
    SCOPED_TRACE(round);
    access_history one_by_one;
    std::uint64_t seq = 1;
    apply_random_accesses(one_by_one, static_cast<int>(pick(40)), pick, seq);
    access_history batched = one_by_one;
    std::vector<access_history::batch_access> batch;
    for (std::uint64_t at = pick(50); at < 1100 && batch.size() < 60; at += pick(40)) {
      const std::uint64_t size = pick(4) == 0 ? 0 : 1 + pick(60);
      batch.push_back({at, at + size, entry(0, 6, modes[pick(std::size(modes))], seq++)});
      at += size;
    }
    ASSERT_TRUE(access_history::batchable(batch));
    vector_clock clock = clock_of(0, 6);
    clock.set(1, pick(4));  // ordered after some of context 1's accesses
    expect_batch_matches_one_by_one(one_by_one, batched, batch, clock);
  }
}

// Note [A batch splices in place]: one history kept across many small
// batches (its chunks keep the room their splices left), each
// batch a few random accesses over a part of it, matches one access at a
// time batch after batch, with chunks of every size.
TEST(AccessHistoryBatch, SmallBatchesOnALongHistoryMatchApplyingOneAtATime) {
  std::mt19937_64 random(20261201);
  const auto& modes = all_access_modes;
  const auto pick = [&](std::uint64_t n) { return random() % n; };
  for (const std::size_t target : {std::size_t{3}, std::size_t{16}, std::size_t{128}}) {
    SCOPED_TRACE(target);
    access_history one_by_one(target);
    access_history batched(target);
    std::uint64_t seq = 1;
    std::vector<history_conflict> ignored;
    for (std::uint64_t k = 0; k < 600; ++k) {  // 600 segments of 8 bytes, 16 apart
      const access_entry w = entry(static_cast<context_slot>(k % 3), 1, access_mode::write, seq++);
      one_by_one.apply(16 * k, 16 * k + 8, w, clock_of(w.when.slot(), 1), ignored);
      batched.apply(16 * k, 16 * k + 8, w, clock_of(w.when.slot(), 1), ignored);
    }
    for (int round = 0; round < 300; ++round) {
      SCOPED_TRACE(round);
      std::vector<access_history::batch_access> batch;
      std::uint64_t at = pick(9600);
      for (std::uint64_t n = 1 + pick(4); n > 0 && at < 9700; --n) {
        const std::uint64_t size = 1 + pick(40);
        batch.push_back({at, at + size, entry(0, 6, modes[pick(std::size(modes))], seq++)});
        at += size + pick(64);
      }
      vector_clock clock = clock_of(0, 6);
      clock.set(1, pick(3));
      clock.set(2, pick(3));
      ASSERT_NO_FATAL_FAILURE(expect_batch_matches_one_by_one(one_by_one, batched, batch, clock));
    }
  }
}

// Note [The same footprint again]: a batch whose accesses each cover
// exactly one segment (the runs of a launch seen before) is applied in
// place, with the conflicts and the state of one access at a time, on one
// chunk and on many.
TEST(AccessHistoryBatch, AccessesOnExactSegmentsMatchApplyingOneAtATime) {
  std::mt19937_64 random(20261130);
  const auto& modes = all_access_modes;
  const auto pick = [&](std::uint64_t n) { return random() % n; };
  for (int round = 0; round < 400; ++round) {
    SCOPED_TRACE(round);
    // Odd rounds: chunks of 1 to 4 segments (Note [A long history in chunks]).
    access_history one_by_one(round % 2 == 1 ? 1 + pick(4) : access_history::default_chunk_target);
    std::uint64_t seq = 1;
    apply_random_accesses(one_by_one, 1 + static_cast<int>(pick(40)), pick, seq);
    access_history batched = one_by_one;
    std::vector<access_history::batch_access> batch;
    for (const auto& segment : one_by_one.segments()) {
      if (pick(3) == 0) continue;
      batch.push_back({segment.begin, segment.end,
                       entry(0, 6, modes[pick(std::size(modes))], seq++)});
    }
    ASSERT_TRUE(access_history::batchable(batch));
    vector_clock clock = clock_of(0, 6);
    clock.set(1, pick(4));
    const std::size_t segments_before = batched.segment_count();
    expect_batch_matches_one_by_one(one_by_one, batched, batch, clock);
    EXPECT_EQ(batched.segment_count(), segments_before);  // in place: no bound moved
  }
}

// Note [A long history in chunks]: histories cut into chunks of 1 to 5
// segments, under random accesses (one at a time and batched, small and
// spanning many chunks), find the same conflicts and hold the same state as
// one history in one chunk; every chunk stays non-empty, in order, and at
// most twice its target.
void expect_well_chunked(const access_history& h, std::size_t target) {
  std::uint64_t end = 0;
  std::size_t total = 0;
  for (std::size_t c = 0; c < h.chunk_count(); ++c) {
    ASSERT_GT(h.chunk_size(c), 0u) << "chunk " << c;
    ASSERT_LE(h.chunk_size(c), 2 * target) << "chunk " << c;
    total += h.chunk_size(c);
  }
  ASSERT_EQ(total, h.segment_count());
  for (const auto& s : h.segments()) {
    ASSERT_LT(s.begin, s.end);
    ASSERT_LE(end, s.begin);
    end = s.end;
  }
}

TEST(AccessHistoryChunks, ChunkedHistoriesMatchOneChunk) {
  std::mt19937_64 random(20261129);
  const auto& modes = all_access_modes;
  const auto pick = [&](std::uint64_t n) { return random() % n; };
  std::size_t most_chunks = 0;
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE(round);
    const std::size_t target = 1 + pick(5);
    access_history chunked(target);
    access_history flat(std::size_t{1} << 40);
    std::uint64_t seq = 1;
    for (int op = 0, n = 20 + static_cast<int>(pick(80)); op < n; ++op) {
      SCOPED_TRACE(op);
      const auto slot = static_cast<context_slot>(pick(3));
      vector_clock clock = clock_of(slot, 2 + op);
      clock.set((slot + 1) % 3, pick(op + 2));  // ordered after some of another context
      std::vector<history_conflict> expected, found;
      if (pick(3) != 0) {
        // Mostly small accesses, which split segments; now and then one over
        // much of the buffer, which reaches across chunks.
        const std::uint64_t begin = pick(2000);
        const std::uint64_t size = pick(8) == 0 ? 1 + pick(1500) : 1 + pick(24);
        const access_entry e = entry(slot, 2 + op, modes[pick(std::size(modes))], seq++);
        flat.apply(begin, begin + size, e, clock, expected);
        chunked.apply(begin, begin + size, e, clock, found);
        expect_same_conflicts(found, expected);
      } else {
        std::vector<access_history::batch_access> batch;
        for (std::uint64_t at = pick(60); at < 2100; at += 1 + pick(90)) {
          const std::uint64_t size = pick(10) == 0 ? 1 + pick(400) : 1 + pick(30);
          batch.push_back({at, at + size, entry(slot, 2 + op, modes[pick(std::size(modes))], seq++)});
          at += size;
        }
        std::vector<access_history::conflict_slice> flat_slices, chunked_slices;
        flat.apply_batch(batch, clock, expected, flat_slices);
        chunked.apply_batch(batch, clock, found, chunked_slices);
        ASSERT_EQ(chunked_slices.size(), flat_slices.size());
        for (std::size_t i = 0; i < flat_slices.size(); ++i) {
          EXPECT_EQ(chunked_slices[i].access, flat_slices[i].access);
          EXPECT_EQ(chunked_slices[i].first, flat_slices[i].first);
          EXPECT_EQ(chunked_slices[i].last, flat_slices[i].last);
        }
        expect_same_conflicts(found, expected);
      }
      expect_well_chunked(chunked, target);
      most_chunks = std::max(most_chunks, chunked.chunk_count());
      expect_same_state(flat, chunked);
      std::vector<history_conflict> flat_free, chunked_free;
      const std::uint64_t free_begin = pick(2000), free_end = free_begin + 1 + pick(800);
      flat.find_unordered(free_begin, free_end, clock_of(slot, 1), flat_free);
      chunked.find_unordered(free_begin, free_end, clock_of(slot, 1), chunked_free);
      expect_same_conflicts(chunked_free, flat_free);
    }
    ASSERT_EQ(flat.chunk_count(), flat.segment_count() == 0 ? 0u : 1u);
  }
  EXPECT_GT(most_chunks, 20u);  // the histories did grow into many chunks
}

TEST(AccessHistoryChunks, AWriteOverEverythingLeavesOneChunkOfOneSegment) {
  access_history h(2);
  std::vector<history_conflict> out;
  for (std::uint64_t k = 0; k < 100; ++k) {
    h.apply(32 * k, 32 * k + 16, entry(0, 1 + k, access_mode::write, k + 1), clock_of(0, 1 + k),
            out);
  }
  ASSERT_GT(h.chunk_count(), 10u);
  h.apply(0, 3200, entry(0, 200, access_mode::write, 200), clock_of(0, 200), out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(h.chunk_count(), 1u);
  ASSERT_EQ(h.segment_count(), 1u);
  EXPECT_EQ(h.segments()[0].write.seq, 200u);
}

// Note [A batch splices in place]: a piece with the state of the segment
// before or after it joins that segment, which stays in the chunk, as when
// the whole chunk was rebuilt.
TEST(AccessHistoryBatch, APieceWithItsNeighboursStateJoinsThem) {
  access_history h;
  std::vector<history_conflict> conflicts;
  const access_entry w = entry(0, 1, access_mode::write, 1);
  h.apply(0, 8, w, clock_of(0, 1), conflicts);
  h.apply(16, 24, w, clock_of(0, 1), conflicts);
  // Segments far away, so that the batch rebuilds only its part.
  const access_entry far_read = entry(1, 1, access_mode::read, 2);
  for (std::uint64_t k = 0; k < 20; ++k) {
    h.apply(1000 + 16 * k, 1008 + 16 * k, far_read, clock_of(1, 1), conflicts);
  }
  ASSERT_EQ(h.segment_count(), 22u);
  std::vector<access_history::conflict_slice> slices;
  const std::vector<access_history::batch_access> batch{{8, 16, w}};
  h.apply_batch(batch, clock_of(0, 1), conflicts, slices);
  EXPECT_TRUE(conflicts.empty());
  ASSERT_EQ(h.segment_count(), 21u);
  const auto segments = h.segments();
  EXPECT_EQ(segments[0].begin, 0u);
  EXPECT_EQ(segments[0].end, 24u);
  EXPECT_EQ(segments[1].begin, 1000u);
}

// Note [A batch splices in place]: `n` segments of 8 bytes, 16 apart, each
// written by another context than its neighbours, so that none joins them.
access_history spaced_writes(std::uint64_t n, std::uint64_t& seq) {
  access_history h;
  std::vector<history_conflict> ignored;
  for (std::uint64_t k = 0; k < n; ++k) {
    const access_entry w = entry(static_cast<context_slot>(k % 3), 1, access_mode::write, seq++);
    h.apply(16 * k, 16 * k + 8, w, clock_of(w.when.slot(), 1), ignored);
  }
  return h;
}

Bounds bounds_of(const access_history& h) {
  Bounds out;
  for (const auto& s : h.segments()) out.emplace_back(s.begin, s.end);
  return out;
}

// Segment k of spaced_writes() read at [2, 6) of its 8 bytes: three pieces.
void expect_split(Bounds& expected, std::uint64_t k) {
  expected.insert(expected.end(), {{16 * k, 16 * k + 2}, {16 * k + 2, 16 * k + 6},
                                   {16 * k + 6, 16 * k + 8}});
}

// The kept runs of one splice move both ways: reads that split two
// segments near the front push what follows right, a write over eleven
// segments behind them pulls the rest left (and the other way round in a
// second batch, whose last run moves right again). Each run must land
// where the model says, whatever the order of the moves.
TEST(AccessHistoryBatch, ASpliceMovesRunsBothWays) {
  std::uint64_t seq = 1;
  access_history one_by_one = spaced_writes(40, seq);
  access_history batched = one_by_one;
  const access_entry r = entry(0, 6, access_mode::read, seq++);
  const access_entry w = entry(0, 6, access_mode::write, seq++);
  const std::vector<access_history::batch_access> grow_then_shrink{
      {16 + 2, 16 + 6, r}, {48 + 2, 48 + 6, r}, {160, 328, w}};
  expect_batch_matches_one_by_one(one_by_one, batched, grow_then_shrink, clock_of(0, 6));
  Bounds expected{{0, 8}};
  expect_split(expected, 1);
  expected.emplace_back(32, 40);
  expect_split(expected, 3);
  for (std::uint64_t k = 4; k < 10; ++k) expected.emplace_back(16 * k, 16 * k + 8);
  expected.emplace_back(160, 328);
  for (std::uint64_t k = 21; k < 40; ++k) expected.emplace_back(16 * k, 16 * k + 8);
  EXPECT_EQ(bounds_of(batched), expected);

  const access_entry w2 = entry(0, 7, access_mode::write, seq++);
  const access_entry r2 = entry(0, 7, access_mode::read, seq++);
  std::vector<access_history::batch_access> shrink_then_grow{{0, 68, w2}};
  for (const std::uint64_t k : {30, 33, 35, 38}) {
    shrink_then_grow.push_back({16 * k + 2, 16 * k + 6, r2});
  }
  expect_batch_matches_one_by_one(one_by_one, batched, shrink_then_grow, clock_of(0, 7));
  expected = {{0, 68}, {68, 72}};  // the write, the rest of segment 4
  for (std::uint64_t k = 5; k < 10; ++k) expected.emplace_back(16 * k, 16 * k + 8);
  expected.emplace_back(160, 328);
  for (std::uint64_t k = 21; k < 40; ++k) {
    if (k == 30 || k == 33 || k == 35 || k == 38) {
      expect_split(expected, k);
    } else {
      expected.emplace_back(16 * k, 16 * k + 8);
    }
  }
  EXPECT_EQ(bounds_of(batched), expected);
}

// Note [A dense batch builds a new array]: reads that split every other
// segment of a chunk build it anew, with the same segments as a splice.
TEST(AccessHistoryBatch, ADenseBatchBuildsItsChunkAnew) {
  std::uint64_t seq = 1;
  access_history one_by_one = spaced_writes(100, seq);
  access_history batched = one_by_one;
  ASSERT_EQ(batched.chunk_count(), 1u);
  const access_entry r = entry(0, 6, access_mode::read, seq++);
  std::vector<access_history::batch_access> batch;
  Bounds expected;
  for (std::uint64_t k = 0; k < 100; ++k) {
    if (k % 2 == 0) {
      batch.push_back({16 * k + 2, 16 * k + 6, r});
      expect_split(expected, k);
    } else {
      expected.emplace_back(16 * k, 16 * k + 8);
    }
  }
  expect_batch_matches_one_by_one(one_by_one, batched, batch, clock_of(0, 6));
  ASSERT_EQ(batched.chunk_count(), 1u);  // 200 segments: not cut
  EXPECT_EQ(bounds_of(batched), expected);
}

// Note [A batch splices in place]: one read over 60 segments and the gaps
// between them adds 60 pieces, more than the chunk of 100 has room for
// (131, as its growth left it), though a batch of one access has room by
// merge_batch's rule: the chunk grows (a reallocation that moves every
// segment), then the splice puts the parts in place.
TEST(AccessHistoryBatch, ABatchPastItsChunksRoomGrowsIt) {
  std::uint64_t seq = 1;
  access_history one_by_one = spaced_writes(100, seq);
  access_history batched = one_by_one;
  const access_entry r = entry(0, 6, access_mode::read, seq++);
  const std::vector<access_history::batch_access> batch{{0, 16 * 60, r}};
  expect_batch_matches_one_by_one(one_by_one, batched, batch, clock_of(0, 6));
  Bounds expected;
  for (std::uint64_t k = 0; k < 100; ++k) {
    expected.emplace_back(16 * k, 16 * k + 8);
    if (k < 60) expected.emplace_back(16 * k + 8, 16 * k + 16);  // the gap, read
  }
  ASSERT_EQ(batched.chunk_count(), 1u);
  EXPECT_EQ(bounds_of(batched), expected);
}

TEST(AccessHistoryBatch, OverlappingOrUnsortedAccessesAreNotBatchable) {
  const access_entry e = entry(0, 1, access_mode::read, 1);
  const std::vector<access_history::batch_access> overlapping{{0, 10, e}, {5, 20, e}};
  const std::vector<access_history::batch_access> unsorted{{20, 30, e}, {0, 10, e}};
  const std::vector<access_history::batch_access> touching{{0, 10, e}, {10, 20, e}};
  EXPECT_FALSE(access_history::batchable(overlapping));
  EXPECT_FALSE(access_history::batchable(unsorted));
  EXPECT_TRUE(access_history::batchable(touching));
}

// Note [The last write kept apart]: a write whose every field differs from
// an empty entry's, so that a report shows whether all of it came back.
access_entry full_write(context_slot slot, std::uint64_t clock, std::uint64_t seq) {
  access_entry e = entry(slot, clock, access_mode::write, seq);
  e.offset = 64;
  e.size = 4096;
  e.alloc = alloc_id{7};
  e.name = string_id{11};
  e.stack = stack_id{13};
  e.nvtx = string_id{17};
  e.thread = thread_id{19};
  e.graph = graph_id{23};
  e.graph_node = 29;
  e.op = operation_kind::memcpy;
  e.origin = access_origin::measured;
  e.cooperative = true;
  return e;
}

TEST(AccessHistoryWrites, AWritesWholeEntryIsReportedAfterSplitsAndMerges) {
  access_history h(2);  // many chunks
  std::vector<history_conflict> out;
  const access_entry w = full_write(0, 1, 1);
  h.apply(0, 4096, w, clock_of(0, 1), out);
  std::uint64_t seq = 2;
  // Reads of the writer's own context split the segment, one by one and in
  // batches, and other writes come and go elsewhere (the table compacts).
  for (std::uint64_t k = 0; k < 60; ++k) {
    h.apply(64 * k + 3, 64 * k + 40, entry(0, 2 + k, access_mode::read, seq++),
            clock_of(0, 2 + k), out);
    h.apply(5000 + 16 * k, 5008 + 16 * k, entry(2, 1 + k, access_mode::write, seq++),
            clock_of(2, 1 + k), out);
  }
  std::vector<access_history::batch_access> batch;
  for (std::uint64_t at = 1; at < 4096; at += 50) {
    batch.push_back({at, at + 20, entry(0, 100, access_mode::read, seq++)});
  }
  std::vector<access_history::conflict_slice> slices;
  h.apply_batch(batch, clock_of(0, 100), out, slices);
  ASSERT_TRUE(out.empty());
  ASSERT_GT(h.segment_count(), 100u);
  // Context 1 ordered after none of it writes all of it: the write is one
  // conflict over the whole range, with every field as it was recorded.
  vector_clock after_reads = clock_of(1, 1);
  h.apply(0, 4096, entry(1, 1, access_mode::write, seq++), after_reads, out);
  const auto is_w = [&](const history_conflict& c) { return c.previous.seq == 1; };
  ASSERT_EQ(std::count_if(out.begin(), out.end(), is_w), 1);
  const auto c = *std::find_if(out.begin(), out.end(), is_w);
  EXPECT_EQ(c.previous, w);
  EXPECT_EQ(c.begin, 0u);
  EXPECT_EQ(c.end, 4096u);
}

// Equal states join whichever entries of the table hold the writes (a
// batch's piece joins its neighbours: Note [A batch splices in place]); one
// epoch with two entries (one kernel writing two ranges) does not.
TEST(AccessHistoryWrites, StatesAreEqualByTheWholeEntry) {
  access_history h;
  std::vector<history_conflict> out;
  const access_entry w = full_write(0, 1, 1);
  h.apply(0, 8, w, clock_of(0, 1), out);
  h.apply(16, 24, w, clock_of(0, 1), out);  // another entry of the table, equal
  access_entry other = w;
  other.offset = 32;
  h.apply(24, 32, other, clock_of(0, 1), out);  // the same epoch, another range
  std::vector<access_history::conflict_slice> slices;
  const std::vector<access_history::batch_access> batch{{8, 16, w}};
  h.apply_batch(batch, clock_of(0, 1), out, slices);
  EXPECT_TRUE(out.empty());
  const auto segments = h.segments();
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0].begin, 0u);
  EXPECT_EQ(segments[0].end, 24u);
  EXPECT_EQ(segments[0].write, w);
  EXPECT_EQ(segments[1].write, other);
}

TEST(AccessHistoryWrites, OneSegmentWrittenAgainKeepsOneEntry) {
  access_history h;
  std::vector<history_conflict> out;
  for (std::uint64_t k = 1; k <= 100; ++k) {
    h.apply(0, 256, full_write(0, k, k), clock_of(0, k), out);
  }
  EXPECT_EQ(h.write_table_size(), 1u);
  EXPECT_EQ(h.segments()[0].write, full_write(0, 100, 100));
}

// The table holds the live writes and at most as many again (or a few,
// or an eighth of the segments) that no segment holds any more, and
// clear() gives it back.
TEST(AccessHistoryWrites, TheTableOfWritesDropsDeadEntriesAndIsReleased) {
  access_history h(4);
  std::vector<history_conflict> out;
  std::uint64_t seq = 1;
  for (std::uint64_t round = 1; round <= 50; ++round) {
    for (std::uint64_t k = 0; k < 200; ++k) {
      h.apply(16 * k, 16 * k + 8, full_write(0, seq, seq), clock_of(0, seq), out);
      ++seq;
    }
    EXPECT_LE(h.write_table_size(), 2 * 200u + 16);
  }
  ASSERT_TRUE(out.empty());
  // Two segments written again and again: once the table has grown past
  // its last size, it keeps theirs and a few more.
  h.apply(0, 16 * 200, full_write(0, seq, seq), clock_of(0, seq), out);
  ++seq;
  for (int k = 0; k < 500; ++k, ++seq) {
    h.apply(0, 8, full_write(0, seq, seq), clock_of(0, seq), out);
  }
  ASSERT_TRUE(out.empty());
  ASSERT_EQ(h.segment_count(), 2u);
  EXPECT_LE(h.write_table_size(), 2u + 16u);
  EXPECT_EQ(h.segments()[0].write, full_write(0, seq - 1, seq - 1));
  EXPECT_EQ(h.segments()[1].write, full_write(0, seq - 501, seq - 501));
  h.clear();
  EXPECT_EQ(h.write_table_size(), 0u);
  EXPECT_EQ(h.bytes_held(), 0u);
}

}  // namespace
}  // namespace streamsan
