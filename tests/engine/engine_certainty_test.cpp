// Candidates and confirmed diagnostics (Note [Candidates and confirmed
// diagnostics]), their deduplication (Note [Deduplication]) and the exact
// conflicting ranges (Note [One diagnostic per pair of operations]).
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "tests/engine/engine_driver.h"

namespace streamsan {
namespace {

using testing::engine_driver;
using testing::kind_list;
constexpr auto candidate = diagnostic_certainty::candidate;
constexpr auto confirmed = diagnostic_certainty::confirmed;
constexpr auto inferred = access_origin::inferred;
constexpr auto measured = access_origin::measured;
constexpr auto exact = access_origin::exact;

struct two_streams {
  engine_driver d{/*capture_stacks=*/true};
  stream_id s1 = d.stream(stream_flavor::non_blocking);
  stream_id s2 = d.stream(stream_flavor::non_blocking);
  alloc_id x = d.alloc(256);
};

// One pair of call sites, reached once per call: a producer on s1 and a
// consumer on s2 with the given footprints.
[[gnu::noinline]] void producer_consumer(two_streams& t, access producer, access consumer) {
  t.d.launch(t.s1, {producer}, "produce");
  t.d.launch(t.s2, {consumer}, "consume");
  t.d.device_sync();
}

// Several iterations of one loop: the same pair of call sites each time.
[[gnu::noinline]] void iterations(two_streams& t,
                                  const std::vector<std::pair<access, access>>& footprints) {
  for (const auto& [producer, consumer] : footprints) producer_consumer(t, producer, consumer);
}

TEST(EngineCertainty, AnInferredFootprintMakesACandidateNamingItsKernel) {
  two_streams t;
  producer_consumer(t, t.d.touch(t.x, access_mode::read_write, inferred),
                    t.d.touch(t.x, access_mode::read, exact));
  ASSERT_EQ(t.d.diagnostics().size(), 1u);
  const diagnostic& r = t.d.diagnostics()[0];
  EXPECT_EQ(r.certainty, candidate);
  EXPECT_TRUE(is_candidate(r));
  EXPECT_EQ(r.previous->origin, inferred);
  EXPECT_EQ(r.current.origin, exact);
  const auto sides = inferred_sides(r);
  ASSERT_EQ(sides.size(), 1u);
  EXPECT_EQ(sides[0], &*r.previous);
  EXPECT_EQ(t.d.eng().tables().string(sides[0]->name), "produce");
}

TEST(EngineCertainty, BothSidesInferredNameBothKernels) {
  two_streams t;
  producer_consumer(t, t.d.touch(t.x, access_mode::read_write, inferred),
                    t.d.touch(t.x, access_mode::read_write, inferred));
  ASSERT_EQ(t.d.diagnostics().size(), 1u);
  const auto sides = inferred_sides(t.d.diagnostics()[0]);
  ASSERT_EQ(sides.size(), 2u);
  EXPECT_EQ(t.d.eng().tables().string(sides[0]->name), "consume");
  EXPECT_EQ(t.d.eng().tables().string(sides[1]->name), "produce");
}

TEST(EngineCertainty, MeasuredAndExactFootprintsAreConfirmed) {
  for (const auto& [a, b] : {std::pair{measured, measured}, std::pair{measured, exact},
                            std::pair{exact, measured}, std::pair{exact, exact}}) {
    two_streams t;
    producer_consumer(t, t.d.touch(t.x, access_mode::write, a), t.d.touch(t.x, access_mode::read, b));
    ASSERT_EQ(t.d.diagnostics().size(), 1u);
    EXPECT_EQ(t.d.diagnostics()[0].certainty, confirmed);
    EXPECT_TRUE(inferred_sides(t.d.diagnostics()[0]).empty());
  }
}

TEST(EngineCertainty, AMeasurementConfirmsTheCandidateOfTheSameCallSites) {
  two_streams t;
  std::vector<diagnostic> seen;
  t.d.eng().set_diagnostic_callback([&](const diagnostic& d) { seen.push_back(d); });
  // Guessed footprints: both kernels read and write all of x (a
  // write-after-write guess); three launches, then a measured one.
  const auto guess = std::pair{t.d.touch(t.x, access_mode::read_write, inferred),
                               t.d.touch(t.x, access_mode::read_write, inferred)};
  iterations(t, {guess, guess, guess,
                 {t.d.touch(t.x, 0, 128, access_mode::write, measured),
                  t.d.touch(t.x, 64, 128, access_mode::read, measured)}});
  ASSERT_EQ(t.d.diagnostics().size(), 1u);
  const diagnostic& r = t.d.diagnostics()[0];
  EXPECT_EQ(r.certainty, confirmed);
  EXPECT_EQ(r.count, 4u);  // the three guesses and the confirmation
  EXPECT_EQ(r.hazard_kind, hazard::read_after_write);  // the measured details
  EXPECT_EQ(r.current.mode, access_mode::read);
  EXPECT_EQ(r.current.origin, measured);
  EXPECT_EQ(r.overlap_offset, 64u);
  EXPECT_EQ(r.overlap_size, 64u);
  ASSERT_EQ(seen.size(), 2u);  // once as a candidate, once confirmed
  EXPECT_EQ(seen[0].certainty, candidate);
  EXPECT_EQ(seen[0].hazard_kind, hazard::write_after_write);
  EXPECT_EQ(seen[1].certainty, confirmed);
  EXPECT_EQ(seen[1].count, 4u);
  EXPECT_EQ(t.d.eng().statistics().confirmed_candidates, 1u);
  EXPECT_EQ(t.d.eng().statistics().duplicate_diagnostics, 3u);
}

TEST(EngineCertainty, MeasuredDisjointFootprintsLeaveTheCandidateUnconfirmed) {
  two_streams t;
  int callbacks = 0;
  t.d.eng().set_diagnostic_callback([&](const diagnostic&) { ++callbacks; });
  iterations(t, {{t.d.touch(t.x, access_mode::read_write, inferred),
                  t.d.touch(t.x, access_mode::read_write, inferred)},
                 {t.d.touch(t.x, 0, 128, access_mode::write, measured),
                  t.d.touch(t.x, 128, 128, access_mode::write, measured)}});
  ASSERT_EQ(t.d.diagnostics().size(), 1u);
  EXPECT_EQ(t.d.diagnostics()[0].certainty, candidate);
  EXPECT_EQ(t.d.diagnostics()[0].count, 1u);
  EXPECT_EQ(callbacks, 1);
}

TEST(EngineCertainty, ACandidateAfterAConfirmedRaceFoldsIntoIt) {
  two_streams t;
  int callbacks = 0;
  t.d.eng().set_diagnostic_callback([&](const diagnostic&) { ++callbacks; });
  iterations(t, {{t.d.touch(t.x, access_mode::write, measured),
                  t.d.touch(t.x, access_mode::read, measured)},
                 {t.d.touch(t.x, access_mode::read_write, inferred),
                  t.d.touch(t.x, access_mode::read_write, inferred)}});
  ASSERT_EQ(t.d.diagnostics().size(), 1u);
  EXPECT_EQ(t.d.diagnostics()[0].certainty, confirmed);
  EXPECT_EQ(t.d.diagnostics()[0].hazard_kind, hazard::read_after_write);
  EXPECT_EQ(t.d.diagnostics()[0].count, 2u);
  EXPECT_EQ(callbacks, 1);
}

TEST(EngineCertainty, ConfirmedRacesWithAnotherHazardStayApartAsBefore) {
  two_streams t;
  iterations(t, {{t.d.touch(t.x, access_mode::write, measured),
                  t.d.touch(t.x, access_mode::read, measured)},
                 {t.d.touch(t.x, access_mode::write, measured),
                  t.d.touch(t.x, access_mode::write, measured)}});
  ASSERT_EQ(t.d.diagnostics().size(), 2u);
  EXPECT_EQ(t.d.hazards(),
            (std::vector<hazard>{hazard::read_after_write, hazard::write_after_write}));
}

TEST(EngineCertainty, WithoutStacksTheAllocationKeysConfirmation) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking), s2 = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(64), y = d.alloc(64);
  for (const alloc_id buffer : {x, y}) {
    d.launch(s1, {d.touch(buffer, access_mode::read_write, inferred)}, "k1");
    d.launch(s2, {d.touch(buffer, access_mode::read_write, inferred)}, "k2");
    d.device_sync();
  }
  d.launch(s1, {d.touch(y, access_mode::write, measured)}, "k1");
  d.launch(s2, {d.touch(y, access_mode::write, measured)}, "k2");
  ASSERT_EQ(d.diagnostics().size(), 2u);
  EXPECT_EQ(d.diagnostics()[0].allocation->id, x);
  EXPECT_EQ(d.diagnostics()[0].certainty, candidate);
  EXPECT_EQ(d.diagnostics()[1].allocation->id, y);
  EXPECT_EQ(d.diagnostics()[1].certainty, confirmed);
  EXPECT_EQ(d.diagnostics()[1].count, 2u);
}

TEST(EngineCertainty, WithoutDeduplicationEachKeepsItsOwnCertainty) {
  engine_driver d(false, {.deduplicate = false});
  const auto s1 = d.stream(stream_flavor::non_blocking), s2 = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(64);
  d.launch(s1, {d.touch(x, access_mode::read_write, inferred)});
  d.launch(s2, {d.touch(x, access_mode::read_write, inferred)});
  d.device_sync();
  d.launch(s1, {d.touch(x, access_mode::write, measured)});
  d.launch(s2, {d.touch(x, access_mode::write, measured)});
  ASSERT_EQ(d.diagnostics().size(), 2u);
  EXPECT_EQ(d.diagnostics()[0].certainty, candidate);
  EXPECT_EQ(d.diagnostics()[1].certainty, confirmed);
}

TEST(EngineCertainty, UseAfterFreeThroughAnInferredFootprintIsACandidate) {
  engine_driver d;
  const auto s = d.stream();
  const auto x = d.alloc(64);
  d.free(x);
  d.launch(s, {d.touch(x, access_mode::read_write, inferred)});
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::use_after_free}));
  EXPECT_EQ(d.diagnostics()[0].certainty, candidate);
}

TEST(EngineCertainty, AFreeWhileAnInferredKernelMayRunIsACandidate) {
  engine_driver d;
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(64, memory_kind::pinned_host);
  d.launch(s, {d.touch(x, access_mode::read_write, inferred)});
  d.free(x, free_mode::unsynchronized);
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::free_while_in_use}));
  EXPECT_EQ(d.diagnostics()[0].certainty, candidate);
  EXPECT_EQ(d.diagnostics()[0].current.origin, exact);
}

// ---- Note [One diagnostic per pair of operations] ----

// Note [Many accesses merged in one pass]: launches with more measured
// intervals than engine_impl::batch_threshold go to the history at once;
// interleaved disjoint writes stay clean and reads between them race on
// exactly their bytes.
TEST(EngineConflictRanges, ALaunchOfManyIntervalsIsCheckedByteExactly) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking), s2 = d.stream(stream_flavor::non_blocking);
  constexpr std::uint64_t n = 200;
  const auto x = d.alloc(32 * n);
  std::vector<access> evens, odds, reads;
  for (std::uint64_t k = 0; k < n; ++k) {
    evens.push_back(d.touch(x, 32 * k, 16, access_mode::write, measured));
    odds.push_back(d.touch(x, 32 * k + 16, 16, access_mode::write, measured));
    reads.push_back(d.touch(x, 32 * k + 8, 4, access_mode::read, measured));
  }
  d.launch(s1, evens, "evens");
  d.launch(s2, odds, "odds");
  EXPECT_TRUE(d.diagnostics().empty());
  d.launch(s2, reads, "reader");
  ASSERT_EQ(d.diagnostics().size(), 1u);
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(r.hazard_kind, hazard::read_after_write);
  EXPECT_EQ(r.conflict_bytes, 4 * n);
  EXPECT_EQ(r.overlap_offset, 8u);
  EXPECT_EQ(r.overlap_size, 32 * (n - 1) + 4);
}

TEST(EngineConflictRanges, TheIntervalsOfOneLaunchMakeOneDiagnosticWithEveryRange) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking), s2 = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(256);
  d.launch(s1, {d.touch(x, 0, 16, access_mode::write, measured),
                d.touch(x, 32, 16, access_mode::read_write, measured),
                d.touch(x, 64, 16, access_mode::write, measured)},
           "writer");
  d.launch(s2, {d.touch(x, 8, 32, access_mode::read, measured),
                d.touch(x, 70, 30, access_mode::read, measured)},
           "reader");
  ASSERT_EQ(d.diagnostics().size(), 1u);
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(r.count, 1u);
  EXPECT_EQ(r.hazard_kind, hazard::read_after_write);
  EXPECT_EQ(conflict_ranges(r), (std::vector<byte_interval>{{8, 8}, {32, 8}, {70, 10}}));
  EXPECT_EQ(r.range_count, 3u);
  EXPECT_EQ(r.conflict_bytes, 26u);
  EXPECT_EQ(r.overlap_offset, 8u);
  EXPECT_EQ(r.overlap_size, 72u);
  // Each side: its accesses that take part, modes united, extent hulled.
  EXPECT_EQ(r.current.mode, access_mode::read);
  EXPECT_EQ(r.current.offset, 8u);
  EXPECT_EQ(r.current.size, 92u);
  EXPECT_EQ(r.previous->mode, access_mode::read_write);
  EXPECT_EQ(r.previous->offset, 0u);
  EXPECT_EQ(r.previous->size, 80u);
}

TEST(EngineConflictRanges, AdjacentPiecesMergeIntoOneRange) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking), s2 = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(256);
  d.launch(s1, {d.touch(x, 0, 16, access_mode::write, measured),
                d.touch(x, 16, 16, access_mode::write, measured)});
  d.launch(s2, {d.touch(x, 0, 32, access_mode::write, measured)});
  ASSERT_EQ(d.diagnostics().size(), 1u);
  EXPECT_EQ(conflict_ranges(d.diagnostics()[0]), (std::vector<byte_interval>{{0, 32}}));
  EXPECT_TRUE(d.diagnostics()[0].ranges.empty());  // one range: the hull
  EXPECT_EQ(d.diagnostics()[0].range_count, 1u);
  EXPECT_EQ(d.diagnostics()[0].conflict_bytes, 32u);
}

TEST(EngineConflictRanges, OtherHazardsOfOnePairAreSeparateDiagnostics) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking), s2 = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(256);
  d.launch(s1, {d.touch(x, 0, 16, access_mode::read, measured),
                d.touch(x, 32, 16, access_mode::write, measured)});
  d.launch(s2, {d.touch(x, 0, 48, access_mode::write, measured)});
  ASSERT_EQ(d.diagnostics().size(), 2u);
  EXPECT_EQ(d.diagnostics()[0].hazard_kind, hazard::write_after_read);
  EXPECT_EQ(conflict_ranges(d.diagnostics()[0]), (std::vector<byte_interval>{{0, 16}}));
  EXPECT_EQ(d.diagnostics()[1].hazard_kind, hazard::write_after_write);
  EXPECT_EQ(conflict_ranges(d.diagnostics()[1]), (std::vector<byte_interval>{{32, 16}}));
}

TEST(EngineConflictRanges, ManyRangesAreCountedAndTheFirstListed) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking), s2 = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(4096);
  std::vector<access> strided;
  for (std::uint64_t i = 0; i < 40; ++i) strided.push_back(d.touch(x, i * 64, 16, access_mode::write, measured));
  d.launch(s1, strided, "rows");
  d.launch(s2, {d.touch(x, access_mode::read, measured)}, "all");
  ASSERT_EQ(d.diagnostics().size(), 1u);
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(r.ranges.size(), max_listed_ranges);
  EXPECT_EQ(conflict_ranges(r).size(), max_listed_ranges);
  EXPECT_EQ(r.ranges[1], (byte_interval{64, 16}));
  EXPECT_EQ(r.range_count, 40u);
  EXPECT_EQ(r.conflict_bytes, 40u * 16u);
  EXPECT_EQ(r.overlap_offset, 0u);
  EXPECT_EQ(r.overlap_size, 39u * 64u + 16u);
  EXPECT_EQ(conflict_range_count(r), 40u);
  EXPECT_EQ(conflict_byte_count(r), 640u);
}

TEST(EngineConflictRanges, RangesAreRelativeToTheBlockOfACachingAllocator) {
  engine_driver d;
  const auto s1 = d.stream(stream_flavor::non_blocking), s2 = d.stream(stream_flavor::non_blocking);
  const auto segment = d.alloc(1 << 20);
  const auto a = d.block(segment, 4096, 1024, s1);
  d.launch(s1, {d.touch(a, 100, 10, access_mode::write, measured)});
  d.launch(s2, {d.touch(a, 0, 1024, access_mode::read, measured)});
  ASSERT_EQ(d.diagnostics().size(), 1u);
  EXPECT_EQ(d.diagnostics()[0].allocation->id, a);
  EXPECT_EQ(conflict_ranges(d.diagnostics()[0]), (std::vector<byte_interval>{{100, 10}}));
}

TEST(EngineConflictRanges, UnorderedGraphNodesCarryEveryConflictingRange) {
  engine_driver d;
  const auto x = d.alloc(256);
  const auto g = d.graph();
  d.instantiate(g,
                {{"a", {d.touch(x, 0, 16, access_mode::write, measured),
                        d.touch(x, 64, 16, access_mode::write, measured)}},
                 {"b", {d.touch(x, 8, 100, access_mode::read, measured)}}},
                {});
  ASSERT_EQ(d.diagnostics().size(), 1u);
  const diagnostic& r = d.diagnostics()[0];
  EXPECT_EQ(conflict_ranges(r), (std::vector<byte_interval>{{8, 8}, {64, 16}}));
  EXPECT_EQ(r.previous->offset, 0u);
  EXPECT_EQ(r.previous->size, 80u);
  EXPECT_EQ(r.certainty, confirmed);
}

TEST(EngineConflictRanges, AnInferredGraphNodeMakesACandidate) {
  engine_driver d;
  const auto x = d.alloc(256);
  const auto g = d.graph();
  d.instantiate(g,
                {{"a", {d.touch(x, access_mode::read_write, inferred)}},
                 {"b", {d.touch(x, access_mode::read, measured)}}},
                {});
  // Note [Graph candidates wait for a launch]
  EXPECT_TRUE(d.diagnostics().empty());
  d.launch_graph(g, d.stream());
  ASSERT_EQ(d.diagnostics().size(), 1u);
  EXPECT_EQ(d.diagnostics()[0].certainty, candidate);
  EXPECT_EQ(d.diagnostics()[0].previous->origin, inferred);
}

}  // namespace
}  // namespace streamsan
