// Note [Many accesses merged in one pass] (sanitizer/engine/access_history.h):
// a launch of N measured intervals of one allocation applied to a history of
// N segments of another pattern (a scatter before a gather), one access at
// a time against apply_batch. Every interval splits a segment, the case
// that made the one-at-a-time path quadratic.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <span>
#include <vector>

#include "sanitizer/engine/access_history.h"

namespace streamsan {
namespace {

access_entry entry_at(context_slot slot, access_mode mode) {
  access_entry e;
  e.when = epoch(slot, 1);
  e.mode = mode;
  return e;
}

// `segments` writes of 16 bytes every 32 by one context, then `accesses`
// reads of 4 bytes at +8 of every (segments / accesses)-th of them by
// another, ordered after the writes: each read splits a segment. With as
// many reads as segments, a gather over a scatter.
struct scatter_case {
  access_history scattered;
  std::vector<access_history::batch_access> reads;
  vector_clock reader;

  scatter_case(std::uint64_t segments, std::uint64_t accesses) {
    vector_clock writer;
    writer.set(0, 1);
    std::vector<history_conflict> ignored;
    for (std::uint64_t k = 0; k < segments; ++k) {
      scattered.apply(32 * k, 32 * k + 16, entry_at(0, access_mode::write), writer, ignored);
    }
    const std::uint64_t stride = segments / accesses;
    for (std::uint64_t k = 0; k < accesses; ++k) {
      const std::uint64_t s = k * stride;
      reads.push_back({32 * s + 8, 32 * s + 12, entry_at(1, access_mode::read)});
    }
    reader.set(0, 1);
    reader.set(1, 1);
  }
};

void BM_GatherOverAScatterOneByOne(benchmark::State& state) {
  const scatter_case c(static_cast<std::uint64_t>(state.range(0)),
                      static_cast<std::uint64_t>(state.range(0)));
  std::vector<history_conflict> conflicts;
  for (auto _ : state) {
    state.PauseTiming();
    access_history h = c.scattered;
    state.ResumeTiming();
    for (const auto& r : c.reads) h.apply(r.begin, r.end, r.entry, c.reader, conflicts);
    benchmark::DoNotOptimize(h.segment_count());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_GatherOverAScatterOneByOne)->RangeMultiplier(4)->Range(1 << 10, 1 << 16)
    ->Unit(benchmark::kMillisecond);

void BM_GatherOverAScatterBatched(benchmark::State& state) {
  const scatter_case c(static_cast<std::uint64_t>(state.range(0)),
                      static_cast<std::uint64_t>(state.range(0)));
  std::vector<history_conflict> conflicts;
  std::vector<access_history::conflict_slice> slices;
  for (auto _ : state) {
    state.PauseTiming();
    access_history h = c.scattered;
    state.ResumeTiming();
    h.apply_batch(c.reads, c.reader, conflicts, slices);
    benchmark::DoNotOptimize(h.segment_count());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_GatherOverAScatterBatched)->RangeMultiplier(4)->Range(1 << 10, 1 << 20)
    ->Unit(benchmark::kMillisecond);


// A launch of a few measured intervals against a long history (a sparse
// solver's level-by-level updates of one values array): range(0) segments,
// range(1) accesses spread over them.
// `accesses` applied as one batch to a fresh copy of `start` per iteration;
// the copy, and the last one's destruction, untimed.
void apply_batch_to_copies(benchmark::State& state, const access_history& start,
                           std::span<const access_history::batch_access> accesses,
                           const vector_clock& clock) {
  std::vector<history_conflict> conflicts;
  std::vector<access_history::conflict_slice> slices;
  access_history h;
  for (auto _ : state) {
    state.PauseTiming();
    h = start;  // the last copy destroyed here, untimed
    state.ResumeTiming();
    h.apply_batch(accesses, clock, conflicts, slices);
    benchmark::DoNotOptimize(h.segment_count());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(accesses.size()));
}

void BM_FewAccessesOnALongHistoryBatched(benchmark::State& state) {
  const scatter_case c(static_cast<std::uint64_t>(state.range(0)),
                      static_cast<std::uint64_t>(state.range(1)));
  apply_batch_to_copies(state, c.scattered, c.reads, c.reader);
}
BENCHMARK(BM_FewAccessesOnALongHistoryBatched)
    ->Args({1 << 20, 64})->Args({1 << 20, 1024})->Unit(benchmark::kMillisecond);

// Note [A batch splices in place]: the same launch pattern
// applied again and again to one history, as the engine does (no copy: its
// chunks keep the capacity their splices left). Each iteration is two
// batches over range(1) of the range(0) segments, the places moving on by
// 4,099 segments (modulo the spacing) each time: reads that split each segment in three, then
// writes of the whole segments that join the pieces again, so the history
// stays the same length.
void BM_FewAccessesOnALongHistoryInPlace(benchmark::State& state) {
  const scatter_case c(static_cast<std::uint64_t>(state.range(0)),
                      static_cast<std::uint64_t>(state.range(1)));
  const std::uint64_t stride = static_cast<std::uint64_t>(state.range(0) / state.range(1));
  access_history h = c.scattered;
  std::vector<history_conflict> conflicts;
  std::vector<access_history::conflict_slice> slices;
  std::vector<access_history::batch_access> reads = c.reads, writes = c.reads;
  std::uint64_t shift = 0;
  for (auto _ : state) {
    shift = (shift + 4099) % stride;  // far from the last: another chunk, cold
    for (std::size_t k = 0; k < reads.size(); ++k) {
      const std::uint64_t at = 32 * (k * stride + shift);
      reads[k] = {at + 8, at + 12, entry_at(1, access_mode::read)};
      writes[k] = {at, at + 16, entry_at(0, access_mode::write)};
    }
    h.apply_batch(reads, c.reader, conflicts, slices);
    h.apply_batch(writes, c.reader, conflicts, slices);
    conflicts.clear();
    slices.clear();
    benchmark::DoNotOptimize(h.segment_count());
  }
  state.SetItemsProcessed(state.iterations() * 2 * state.range(1));
}
BENCHMARK(BM_FewAccessesOnALongHistoryInPlace)
    ->Args({1 << 20, 64})->Args({1 << 20, 1024})->Args({1 << 16, 1024})
    ->Unit(benchmark::kMillisecond);

// Note [The same footprint again]: a launch whose runs are exactly segments
// of the history, as a kernel's next launch over the same buffers leaves
// them: range(0) segments (16 bytes every 32), range(1) reads of every
// (range(0) / range(1))-th of them, whole.
void BM_TheSameFootprintAgainBatched(benchmark::State& state) {
  const scatter_case c(static_cast<std::uint64_t>(state.range(0)),
                      static_cast<std::uint64_t>(state.range(1)));
  std::vector<access_history::batch_access> again = c.reads;
  for (auto& a : again) {
    a.begin -= 8;  // the whole 16-byte segment the read was inside
    a.end += 4;
  }
  apply_batch_to_copies(state, c.scattered, again, c.reader);
}
// A fixed count: the history's copy before each iteration (untimed) costs
// far more than the timed part in place, and the library would run it for
// minutes to fill its timed half second.
BENCHMARK(BM_TheSameFootprintAgainBatched)
    ->Args({1 << 20, 64})->Args({1 << 20, 1024})->Args({1 << 16, 1 << 16})
    ->Iterations(200)->Unit(benchmark::kMillisecond);

void BM_FewAccessesOnALongHistoryOneByOne(benchmark::State& state) {
  const scatter_case c(static_cast<std::uint64_t>(state.range(0)),
                      static_cast<std::uint64_t>(state.range(1)));
  std::vector<history_conflict> conflicts;
  access_history h;
  for (auto _ : state) {
    state.PauseTiming();
    h = c.scattered;  // the last copy destroyed here, untimed
    state.ResumeTiming();
    for (const auto& r : c.reads) h.apply(r.begin, r.end, r.entry, c.reader, conflicts);
    benchmark::DoNotOptimize(h.segment_count());
  }
  state.SetItemsProcessed(state.iterations() * state.range(1));
}
BENCHMARK(BM_FewAccessesOnALongHistoryOneByOne)
    ->Args({1 << 20, 1})->Args({1 << 20, 64})->Args({1 << 20, 1024})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace streamsan
