// access_history against a model that keeps every byte's state on its own
// (Note [Byte-exact shadow segments] says what a segment stands for: the
// state each of its bytes would have alone). The model has no segments, no
// splits, no merges, no chunks and no batches, which are what can go wrong
// in the history; it follows the rules of the Notes as they are written:
//  - checking (Note [Atomic access sets]): the last write always, the reads
//    unless the access only reads, the atomics unless it is only atomic;
//    each unordered entry whose mode conflicts() is a conflict, one per
//    (hazard, previous access) and apply call, its bytes the hull;
//  - recording: a write replaces the byte's state; a read or an atomic
//    drops the entries of its set it is ordered after and joins it (Note
//    [Bounded read sets]);
//  - a free (find_unordered) checks as a plain write and records nothing.
// Random histories (three contexts, every mode, clocks ordered after some
// of another context's accesses) go through apply, apply_batch and
// find_unordered with chunk targets from 1 segment to the default; after
// every step the conflicts and every byte's state must be the model's.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "sanitizer/engine/access_history.h"
#include "tests/engine/engine_driver.h"

namespace streamsan {
namespace access_history_reference_test {  // Note [Unity test programs in the sanitizer passes]
namespace {

using testing::all_access_modes;

struct byte_state {
  access_entry write;  // when.is_none(): never written
  std::vector<access_entry> reads;
  std::vector<access_entry> atomics;
};

// A conflict as the tests compare it: order within one call carries no
// meaning.
using conflict_key = std::tuple<hazard, std::uint64_t, std::uint64_t, std::uint64_t>;

std::vector<conflict_key> keys(const std::vector<history_conflict>& conflicts) {
  std::vector<conflict_key> out;
  for (const auto& c : conflicts) out.emplace_back(c.kind, c.previous.seq, c.begin, c.end);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::uint64_t> seqs(const std::vector<access_entry>& set) {
  std::vector<std::uint64_t> out;
  for (const auto& e : set) out.push_back(e.seq);
  std::sort(out.begin(), out.end());
  return out;
}

class byte_model {
 public:
  // The conflicts of [begin, end) with `mode` at `clock`, then, when
  // `record`, the access recorded with `entry`.
  std::vector<conflict_key> apply(std::uint64_t begin, std::uint64_t end, const access_entry& entry,
                                  const vector_clock& clock, bool record = true) {
    std::map<std::pair<hazard, std::uint64_t>, std::pair<std::uint64_t, std::uint64_t>> hulls;
    const access_mode mode = entry.mode;
    const auto check = [&](const access_entry& previous, std::uint64_t at) {
      if (previous.when.is_none() || clock.covers(previous.when)) return;
      if (!conflicts(mode, previous.mode)) return;
      const auto key = std::make_pair(hazard_between(mode, previous.mode), previous.seq);
      auto [it, first] = hulls.try_emplace(key, at, at + 1);
      if (!first) it->second.second = at + 1;  // bytes are visited in order
    };
    for (std::uint64_t at = begin; at < end; ++at) {
      byte_state& b = bytes_[at];
      check(b.write, at);
      if (writes(mode) || is_atomic(mode)) {
        for (const auto& r : b.reads) check(r, at);
      }
      if (writes(mode) || reads(mode)) {
        for (const auto& a : b.atomics) check(a, at);
      }
      if (record) record_at(b, entry, clock);
    }
    std::vector<conflict_key> out;
    for (const auto& [key, hull] : hulls) out.emplace_back(key.first, key.second, hull.first, hull.second);
    std::sort(out.begin(), out.end());
    return out;
  }

  const byte_state& at(std::uint64_t byte) {
    return bytes_[byte];
  }

 private:
  static void record_at(byte_state& b, const access_entry& entry, const vector_clock& clock) {
    if (writes(entry.mode)) {
      b = byte_state{entry, {}, {}};
      return;
    }
    const auto join = [&](std::vector<access_entry>& set) {
      std::erase_if(set, [&](const access_entry& e) { return clock.covers(e.when); });
      set.push_back(entry);
    };
    if (reads(entry.mode)) join(b.reads);
    if (is_atomic(entry.mode)) join(b.atomics);
  }

  std::map<std::uint64_t, byte_state> bytes_;
};

access_entry entry(context_slot slot, std::uint64_t clock, access_mode mode, std::uint64_t seq) {
  access_entry e;
  e.when = epoch(slot, clock);
  e.seq = seq;
  e.mode = mode;
  return e;
}

// Every byte below `limit` holds the model's state.
void expect_state(const access_history& history, byte_model& model, std::uint64_t limit) {
  std::vector<const access_history::segment_state*> at(limit, nullptr);
  const auto segments = history.segments();
  for (const auto& s : segments) {
    for (std::uint64_t b = s.begin; b < std::min(s.end, limit); ++b) at[b] = &s;
  }
  for (std::uint64_t b = 0; b < limit; ++b) {
    const byte_state& expected = model.at(b);
    const access_entry none;
    const access_entry& write = at[b] != nullptr ? at[b]->write : none;
    std::vector<access_entry> reads, atomics;
    if (at[b] != nullptr) {
      reads.assign(at[b]->reads.begin(), at[b]->reads.end());
      atomics.assign(at[b]->atomics.begin(), at[b]->atomics.end());
    }
    ASSERT_EQ(write.when.is_none(), expected.write.when.is_none()) << "byte " << b;
    if (!write.when.is_none()) {
      ASSERT_EQ(write, expected.write) << "byte " << b;
    }
    ASSERT_EQ(seqs(reads), seqs(expected.reads)) << "byte " << b;
    ASSERT_EQ(seqs(atomics), seqs(expected.atomics)) << "byte " << b;
  }
}

TEST(AccessHistoryReference, EveryStepMatchesAByteByByteModel) {
  constexpr std::uint64_t span = 700;
  std::mt19937_64 random(20261129);
  const auto pick = [&](std::uint64_t n) { return random() % n; };
  const auto& modes = all_access_modes;
  for (int round = 0; round < 150; ++round) {
    SCOPED_TRACE(round);
    const std::size_t target = round % 4 == 3 ? access_history::default_chunk_target : 1 + pick(4);
    access_history history(target);
    byte_model model;
    std::uint64_t seq = 1;
    for (int op = 0, n = 10 + static_cast<int>(pick(50)); op < n; ++op) {
      SCOPED_TRACE(op);
      const auto slot = static_cast<context_slot>(pick(3));
      vector_clock clock;
      clock.set(slot, 2 + op);
      clock.set((slot + 1) % 3, pick(op + 2));  // after some of another context's accesses
      const auto mode = [&] { return modes[pick(std::size(modes))]; };
      switch (pick(4)) {
        case 0:
        case 1: {  // one access: mostly small, now and then most of the span
          const std::uint64_t begin = pick(span - 1);
          const std::uint64_t size = 1 + (pick(6) == 0 ? pick(span - begin) : pick(std::min<std::uint64_t>(20, span - begin)));
          const access_entry e = entry(slot, 2 + op, mode(), seq++);
          std::vector<history_conflict> found;
          history.apply(begin, begin + size, e, clock, found);
          ASSERT_EQ(keys(found), model.apply(begin, begin + size, e, clock));
          break;
        }
        case 2: {  // a batch: sorted, disjoint, some empty
          std::vector<access_history::batch_access> batch;
          for (std::uint64_t at = pick(30); at < span && batch.size() < 40; at += 1 + pick(40)) {
            const std::uint64_t size = std::min(span - at, pick(5) == 0 ? std::uint64_t{0} : 1 + pick(30));
            batch.push_back({at, at + size, entry(slot, 2 + op, mode(), seq++)});
            at += size;
          }
          ASSERT_TRUE(access_history::batchable(batch));
          std::vector<history_conflict> found;
          std::vector<access_history::conflict_slice> slices;
          history.apply_batch(batch, clock, found, slices);
          std::vector<std::vector<history_conflict>> per_access(batch.size());
          for (const auto& s : slices) {
            per_access[s.access].assign(found.begin() + static_cast<std::ptrdiff_t>(s.first),
                                        found.begin() + static_cast<std::ptrdiff_t>(s.last));
          }
          for (std::size_t i = 0; i < batch.size(); ++i) {
            ASSERT_EQ(keys(per_access[i]), model.apply(batch[i].begin, batch[i].end, batch[i].entry, clock))
                << "access " << i << " of the batch";
          }
          break;
        }
        case 3: {  // a free, as a plain write that records nothing
          const std::uint64_t begin = pick(span - 1), end = begin + 1 + pick(span - begin);
          vector_clock free_clock;
          free_clock.set(slot, 1 + pick(op + 2));
          std::vector<history_conflict> found;
          history.find_unordered(begin, end, free_clock, found);
          ASSERT_EQ(keys(found),
                    model.apply(begin, end, entry(slot, 0, access_mode::write, 0), free_clock, false));
          break;
        }
      }
      expect_state(history, model, span);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace access_history_reference_test
}  // namespace streamsan
