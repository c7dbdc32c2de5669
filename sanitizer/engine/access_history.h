// What happened to the bytes of one root allocation: for every byte range,
// the last plain write, and the reads and the atomics since it.
//
// Note [Byte-exact shadow segments]
// ThreadSanitizer keeps a few shadow cells per 8 application bytes. Device
// buffers are large and are accessed a whole tensor (or a tile) at a time, so
// the history here is a sorted vector of non-overlapping byte segments
// [begin, end), each with one state: the last write, the reads since it and
// the atomics since it. An access that covers part of a segment splits it,
// so conflicts are byte exact: two streams writing disjoint halves of one
// buffer never conflict, and a partial overlap conflicts on exactly the
// overlapping bytes. After a write, the whole written range has one state
// again and becomes a single segment (adjacent segments with equal state are
// merged), so the number of segments is bounded by the distinct boundaries
// live accesses use, not by the length of the log.
//
// Note [A long history in chunks]
// Measured footprints can leave a million segments in one history: a sparse
// solver's level-by-level kernels each write scattered entries of one values
// array, and neighbouring entries written by different launches never
// merge. In one sorted vector every access that splits a segment moved
// half of it: 6.5 ms for one access at a million segments (bench/engine's
// BM_FewAccessesOnALongHistory), and cuSolverRf under --precise spent
// minutes of its engine thread in those moves (H200, 2026-11-29). So the
// segments are kept in chunks, each a sorted vector of at most
// 2 * chunk_target_ of them, in order: an access finds its chunk by a binary
// search over the chunks' ends, changes only that chunk (absorbing the next
// ones first while it reaches past its end), and a chunk grown past twice
// the target is cut into chunks of the target, one shrunk below a quarter
// absorbs its successor. An access then moves O(chunk_target_) segments,
// plus the segments it covers. Nearly every history has one chunk; the
// first is a member of its own, so the single-segment check of apply()
// reads what it read before (engine_replay under callgrind: the same
// instructions). The target is 128 segments, then 16 KB (8 KB since Note
// [The last write kept apart]): with 512, a batch's merge of a chunk took
// and gave back blocks above malloc's mmap threshold, and the gather of
// history_bench spent its time in page faults.
//
// Note [Bounded read sets]
// A read drops every earlier read that happens before it (TSan does the same
// with its shadow cells): such a read is redundant, because anything that
// races with it also races with the new read or is ordered after both. All
// reads of one context are ordered, so a segment holds at most one read per
// context, and a write clears the set.
//
// Note [Atomic access sets]
// Two atomics never race with each other; an atomic races with a plain read
// or write of the same bytes (Note [Atomics are their own access kind],
// sanitizer/log/record.h). So an atomic does not replace the last write nor
// clear the reads: it joins a third set, the atomics since the last write,
// bounded exactly as the reads are (an atomic drops the earlier atomics it is
// ordered after), and cleared by a plain write. A mode with several bits is
// recorded in every place one of its bits belongs: a write in the write slot
// (whatever else it does, it conflicts with everything), a read+atomic in
// both sets. Checking compares the current mode with each unordered stored
// entry through conflicts(): the write slot always; the reads unless the
// current access only reads; the atomics unless it is only atomic. An entry
// skipped that way (a read+atomic in the read set, seen by a plain read) is
// also in the other set, or was dropped there for an atomic ordered after
// it, which then conflicts instead. Each (hazard, previous access) is
// reported once per apply, even when the entry sits in two sets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sanitizer/engine/access_entry.h"
#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/engine/entry_set.h"
#include "sanitizer/engine/vector_clock.h"
#include "sanitizer/log/record.h"

namespace streamsan {

// A previous access the current one is not ordered after.
struct history_conflict {
  hazard kind = hazard::none;
  access_entry previous;
  std::uint64_t begin = 0;  // the bytes in conflict, in root coordinates
  std::uint64_t end = 0;
};

class access_history {
 public:
  static constexpr std::size_t default_chunk_target = 128;  // chunks of 128 to 256 segments
  access_history() = default;
  // Tests pass small targets to cut chunks often (Note [A long history in
  // chunks]); at least 1.
  explicit access_history(std::size_t chunk_target) noexcept
      : chunk_target_(chunk_target == 0 ? 1 : chunk_target) {}

  // Checks the access [begin, end) with `entry.mode` by the context whose clock is
  // `clock` against the history, appends the conflicts to `conflicts` (one
  // per previous access and hazard, with the hull of the bytes in conflict),
  // and records the access.
  [[gnu::always_inline]] void apply(std::uint64_t begin, std::uint64_t end,
                                    const access_entry& entry, const vector_clock& clock,
                                    std::vector<history_conflict>& conflicts) {
    apply(begin, end, entry, clock, clock.view(), conflicts);
  }
  // The same, with `view` = clock.view(): a launch takes it once for all
  // its accesses (Note [One clock view per launch] in memory_rules.cpp).
  [[gnu::always_inline]] void apply(std::uint64_t begin, std::uint64_t end,
                                    const access_entry& entry, const vector_clock& clock,
                                    clock_view view, std::vector<history_conflict>& conflicts) {
    // The common case, inline: the access covers exactly the only segment
    // (the same whole tensor as last time). No search, split or merge. The
    // segment lies in the history itself (Note [The only segment kept
    // inside]); unused, its bounds match no access.
    if (only_.begin == begin && only_.end == end) [[likely]] {
      apply_exact<true>(only_, entry, view, &conflicts);
      return;
    }
    apply_search(begin, end, entry, clock, conflicts);
  }
  // Note [Conflicts cleared only when found]
  // The launch path's form: when the access covers the only segment
  // exactly and every stored access it would be checked against is
  // ordered before it, records it and returns true; else changes nothing
  // and returns false, and the caller applies it in full (apply(), into a
  // scratch it clears then: engine_impl::apply_unordered). Clearing the
  // scratch vector before every access and testing it after cost about
  // nine instructions an access, loads of the vector's bounds the
  // compiler could not keep: the single-segment check first asks whether
  // every stored access it would check is ordered before this one (the
  // same loads as the check, no calls), and only if not clears the vector
  // and checks. engine_replay under callgrind (release, 2026-12-02):
  // 568.2 -> 555.2 instructions per launch. The question and the check go
  // through one visitor (any_unordered), so they cannot disagree on which
  // entries count: 496.8 -> 500.8 at the end of engine-speed-6, kept for
  // that. Note [The conflicting access out of line] (memory_rules.cpp)
  // moved the rest out of the history.
  [[gnu::always_inline]] bool apply_if_ordered(std::uint64_t begin, std::uint64_t end,
                                               const access_entry& entry, clock_view view) {
    if (only_.begin == begin && only_.end == end) [[likely]] {
      return apply_exact<true, true>(only_, entry, view, nullptr);
    }
    return false;
  }

  // Note [Many accesses merged in one pass]
  // A measured footprint can bring a million intervals of one allocation in
  // one launch (a gather, a scatter, a hash table), and each that splits a
  // segment of a long history was inserted into the middle of its vector,
  // moving everything after it: quadratic, seconds for one launch record
  // (an H200's engine thread spent minutes on segmentationTreeThrust under
  // --precise). Accesses sorted by begin and disjoint are instead merged
  // with each chunk they touch (Note [A long history in chunks]) in one
  // pass, and the result is spliced into the chunk in place (Note [A batch
  // splices in place]), O(segments of those chunks + accesses).
  // Each is checked and recorded exactly as apply() would, in order; they
  // cannot see one another, being disjoint. Conflicts go to `conflicts`,
  // and for each access with some, `slices` says which. One access that
  // splits segments keeps its own in-place walk (apply_general): as a
  // batch of one, which rebuilds its whole chunk, accesses one at a time
  // were 3.7 times slower (2026-11-29, release, BM_GatherOverAScatterOneByOne
  // 1,024: 0.52 -> 1.90 ms); AccessHistoryReference checks both walks
  // against one model of bytes.
  struct batch_access {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    access_entry entry;
  };
  struct conflict_slice {
    std::size_t access = 0;  // index into the batch
    std::size_t first = 0;   // [first, last) of `conflicts`
    std::size_t last = 0;
  };
  // Whether apply_batch takes them: sorted by begin, disjoint.
  static bool batchable(std::span<const batch_access> accesses) noexcept;
  void apply_batch(std::span<const batch_access> accesses, const vector_clock& clock,
                   std::vector<history_conflict>& conflicts, std::vector<conflict_slice>& slices);

  // Appends every access to [begin, end) that `clock` does not cover, as if
  // a plain write at `clock` happened (a free: Note [Frees check like writes]).
  void find_unordered(std::uint64_t begin, std::uint64_t end, const vector_clock& clock,
                      std::vector<history_conflict>& conflicts) const;

  void clear() noexcept;

  // Note [The last write kept apart]
  // A segment held its last write's whole entry, 64 bytes of which
  // checking reads only the epoch: a segment was two cache lines. The entry
  // now lies in the history's table of writes (writes_), and the segment
  // keeps its epoch and its index there, one line in all (Note [One cache
  // line per stored access], entry_set.h): a splice moves half the bytes,
  // a search meets twice the segments per page. Pieces of a split segment
  // share its index. The entry is read where a conflict is reported and
  // where two states are compared (same_state(): equal indices, or equal
  // entries, so equality means what it did). Writes append to the table;
  // compact_writes() drops the entries no segment holds any more, when the
  // table has grown past the live ones, and only between accesses, when
  // every index the history holds is in its chunks. The only segment of a
  // history overwrites its entry in place (store_write()). cuSolverRf's
  // --precise trace, `streamsan analyze`, release, host, five interleaved
  // runs, medians: 1.25 -> 1.09 s of user time, 0.35 -> 0.24 s of system
  // time (page faults), 664 -> 482 MB resident.
  using write_ref = std::uint32_t;
  static constexpr write_ref no_write = UINT32_MAX;
  struct alignas(entry_set::line) segment {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    entry_set reads;
    entry_set atomics;           // Note [Atomic access sets]
    epoch write_when;            // the last write's epoch; is_none(): never written
    write_ref write = no_write;  // its entry: write_of()
  };
  static_assert(sizeof(segment) == entry_set::line);
  std::size_t segment_count() const noexcept;
  // A segment as tests and tools see it, its last write's entry included.
  struct segment_state {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    entry_set reads;
    entry_set atomics;
    access_entry write;  // write.when.is_none(): never written
  };
  // Copies of the segments in order (tests and tools: a history may hold
  // millions).
  std::vector<segment_state> segments() const;
  // The last write of `s`, a segment of this history (an empty entry if
  // none).
  const access_entry& write_of(const segment& s) const noexcept {
    return s.write == no_write ? never_written : writes_[s.write];
  }
  // Entries in the table of writes, live or not yet dropped (tests).
  std::size_t write_table_size() const noexcept { return writes_.size(); }
  std::size_t chunk_count() const noexcept {
    return has_only() ? 1 : first_.empty() ? 0 : 1 + rest_.size();
  }
  std::size_t chunk_size(std::size_t c) const noexcept { return chunk(c).size(); }
  // Visits every stored access: each segment's last write (possibly none),
  // its reads and its atomics. The sweep of Note [Retiring context slots]
  // relies on it seeing every epoch the history holds.
  template <class F>
  void for_each_entry(F&& f) const {
    for_each_segment([&](const segment& s) {
      f(write_of(s));
      for (const auto& r : s.reads) f(r);
      for (const auto& a : s.atomics) f(a);
    });
  }
  template <class F>
  void for_each_segment(F&& f) const {
    for (std::size_t c = 0; c < chunk_count(); ++c) {
      for (const auto& s : chunk(c)) f(s);
    }
  }
  std::size_t read_count() const noexcept;
  std::size_t atomic_count() const noexcept;
  std::size_t bytes_held() const noexcept;

 private:
  // One segment exactly covered by the access: check, then record. Plain
  // reads and writes, nearly every access, get their own copy with the mode
  // folded in. Always inlined: it is the launch path's innermost step.
  // `only`: s is only_ (Note [The only segment kept inside]).
  // `if_ordered`: Note [Conflicts cleared only when found]; records the
  // access only if nothing it would be checked against is unordered, and
  // returns whether it did (`conflicts` may then be null). Otherwise
  // checks into *conflicts, records, and returns true.
  //
  // Note [Reads tested first]
  // The switch on the mode became a compare against write, then above,
  // then against read: five instructions to reach a read, two a write.
  // Kernels read more buffers than they write (engine_replay: two reads
  // and a write per launch), so a read is tested for first, and the
  // switch takes the rest. engine_replay under callgrind (release,
  // 2026-12-02): 526.2 -> 520.2 instructions per launch.
  template <bool only = false, bool if_ordered = false>
  [[gnu::always_inline]] bool apply_exact(segment& s, const access_entry& entry,
                                          clock_view clock,
                                          std::vector<history_conflict>* conflicts) {
    // Note [Reads tested first]
    if (entry.mode == access_mode::read) [[likely]] {
      return apply_exact_as<only, if_ordered>(access_mode::read, s, entry, clock, conflicts);
    }
    switch (entry.mode) {
      case access_mode::read:
        return apply_exact_as<only, if_ordered>(access_mode::read, s, entry, clock, conflicts);
      case access_mode::write:
        return apply_exact_as<only, if_ordered>(access_mode::write, s, entry, clock, conflicts);
      case access_mode::read_write:
      case access_mode::atomic:
      case access_mode::read_atomic:
      case access_mode::write_atomic:
      case access_mode::read_write_atomic:
        return apply_exact_as<only, if_ordered>(entry.mode, s, entry, clock, conflicts);
    }
    return false;
  }

  // The segment lies in its chunk, the rest of the history at rest: the
  // table of writes may be compacted (Note [The last write kept apart]).
  //
  // Note [The only segment writes in place]
  // A write to only_ that already holds a write overwrites that entry in
  // the table (store_write), so the table does not grow: neither the test
  // of which segment it is nor the one for compaction is needed there.
  // With check() testing the atomics for emptiness before their loop,
  // engine_replay under callgrind (release, 2026-12-02): 626.2 -> 604.2
  // instructions per launch, the same L1 misses.
  template <bool only, bool if_ordered>
  [[gnu::always_inline]] bool apply_exact_as(access_mode mode, segment& s,
                                             const access_entry& entry, clock_view clock,
                                             std::vector<history_conflict>* conflicts) {
    if constexpr (if_ordered) {
      // Note [No flag for the conflict found]
      if (!ordered_after_all(s, mode, clock)) [[unlikely]] return false;
    } else {
      check(s, s.begin, s.end, mode, clock, *conflicts, conflicts->size());
    }
    record_exact<only>(mode, s, entry, clock);
    return true;
  }
  // Note [No flag for the conflict found]
  // apply_exact_as recorded the access on one path for both outcomes of
  // its check and returned a flag set on the way, which the compiler kept
  // on the stack: a store, a load and a branch on it for every access. The
  // unlikely path (some stored access unordered) now records on its own,
  // so that the common one returns a constant false and the caller's test
  // of it folds away. engine_replay under callgrind (release, 2026-12-02):
  // 541.2 -> 526.2 instructions per launch, the same L1 misses. (Since
  // Note [The conflicting access out of line], memory_rules.cpp, the
  // unlikely path is the caller's: the common one returns a constant true.)
  template <bool only>
  [[gnu::always_inline]] void record_exact(access_mode mode, segment& s,
                                           const access_entry& entry, clock_view clock) {
    if (only && writes(mode) && s.write != no_write) [[likely]] {
      s.write_when = entry.when;
      writes_[s.write] = entry;
      s.reads.clear();
      s.atomics.clear();
      return;
    }
    record(s, entry, mode, clock);
    if (writes(mode)) maybe_compact_writes();
  }

  // Whether check() would look at no entry: every stored access it checks
  // is ordered before the current one (Note [Conflicts cleared only when
  // found]).
  [[gnu::always_inline]] bool ordered_after_all(const segment& s, access_mode mode,
                                                clock_view clock) const {
    return !any_unordered(s, mode, clock, [](const access_entry&) { return true; });
  }

  // Note [Atomic access sets]: every unordered stored access whose mode
  // conflicts with `mode`. Only accesses the current context is not ordered
  // after count.
  [[gnu::always_inline]] void check(const segment& s, std::uint64_t begin, std::uint64_t end,
                                    access_mode mode, clock_view clock,
                                    std::vector<history_conflict>& out, std::size_t first) const {
    any_unordered(s, mode, clock, [&](const access_entry& previous) {
      check_entry(previous, begin, end, mode, out, first);
      return false;
    });
  }

  // Calls `visit` with each stored access of `s` that an access of `mode`
  // must be checked against, those `clock` does not cover, until `visit`
  // returns true; returns whether it did. check() and ordered_after_all()
  // share it, so that they cannot disagree on which entries count.
  template <class Visit>
  [[gnu::always_inline]] bool any_unordered(const segment& s, access_mode mode, clock_view clock,
                                            Visit&& visit) const {
    if (!clock.covers(s.write_when) && !s.write_when.is_none()) [[unlikely]] {
      if (visit(write_of(s))) return true;
    }
    if (writes(mode) || is_atomic(mode)) {
      for (const auto& r : s.reads) {
        if (!clock.covers(r.when)) [[unlikely]] {
          if (visit(r)) return true;
        }
      }
    }
    if ((writes(mode) || reads(mode)) && !s.atomics.empty()) [[unlikely]] {
      for (const auto& a : s.atomics) {
        if (!clock.covers(a.when)) [[unlikely]] {
          if (visit(a)) return true;
        }
      }
    }
    return false;
  }

  static void check_entry(const access_entry& previous, std::uint64_t begin, std::uint64_t end,
                          access_mode mode, std::vector<history_conflict>& out,
                          std::size_t first) {
    if (conflicts(mode, previous.mode)) {
      note_conflict(out, first, hazard_between(mode, previous.mode), previous, begin, end);
    }
  }

  // A write replaces the segment's state; a read and an atomic join their
  // sets (a read+atomic both). `mode` is entry.mode.
  [[gnu::always_inline]] void record(segment& s, const access_entry& entry, access_mode mode,
                                     clock_view clock) {
    if (writes(mode)) {
      s.write_when = entry.when;
      s.write = store_write(s.write, entry);
      s.reads.clear();
      s.atomics.clear();
      return;
    }
    if (reads(mode)) record_bounded(s.reads, entry, clock);
    if (is_atomic(mode)) record_bounded(s.atomics, entry, clock);
  }

  // Note [Bounded read sets], for reads and atomics alike. The new access
  // takes the place of the first one it is ordered after; further such
  // accesses are swapped out with the last one (the order of a set carries
  // no meaning).
  //
  // Note [Sets of one]
  // A launch's read nearly always meets an empty set (the bytes were just
  // written) or one entry that it is ordered after (its own stream's last
  // read, or one the events ordered): those two take no loop. In
  // engine_replay every read meets one of them (half each), every write a
  // set of one: 604.2 -> 586.2 instructions per launch under callgrind.
  static void record_bounded(entry_set& set, const access_entry& entry,
                             clock_view clock) {
    if (set.size() <= 1) [[likely]] {
      if (set.size() == 1 && clock.covers(set[0].when)) {
        set[0] = entry;
      } else {
        set.push_back(entry);
      }
      return;
    }
    bool placed = false;
    for (std::size_t i = 0; i < set.size();) {
      if (!clock.covers(set[i].when)) {
        ++i;
      } else if (!placed) {
        set[i++] = entry;
        placed = true;
      } else {
        if (i + 1 != set.size()) set[i] = set.back();
        set.pop_back();
      }
    }
    if (!placed) set.push_back(entry);
  }

  // One conflict per (hazard, previous access) within one apply call; its
  // bytes are the hull of the pieces found.
  [[gnu::cold]] static void note_conflict(std::vector<history_conflict>& out, std::size_t first,
                                          hazard kind, const access_entry& previous,
                                          std::uint64_t begin, std::uint64_t end);

  // Note [The last write kept apart]: where `s`, about to write `entry`,
  // held `old`. The only segment of a history holds the only index in use:
  // its entry is overwritten (a buffer written whole, again and again,
  // keeps one entry). Else the entry is appended; compact_writes() drops
  // the old one once no segment holds it.
  write_ref store_write(write_ref old, const access_entry& entry) {
    if (old != no_write && (has_only() || (rest_.empty() && first_.size() == 1))) {
      writes_[old] = entry;
      return old;
    }
    writes_.push_back(entry);
    return static_cast<write_ref>(writes_.size() - 1);
  }
  // Only between accesses: each index in use then lies in a chunk.
  void maybe_compact_writes() {
    if (writes_.size() >= compact_at_) [[unlikely]] compact_writes();
  }
  void compact_writes();
  bool same_state(const segment& a, const segment& b) const noexcept;
  // Note [Byte-exact shadow segments]: `b` follows `a` with its state, and
  // the two are one segment.
  bool joins(const segment& a, const segment& b) const noexcept {
    return a.end == b.begin && same_state(a, b);
  }
  // `s` with the bounds [begin, end): copies of its sets, or, when `take`,
  // the sets entry_set::take_or_copy gives.
  static segment part_of(segment& s, std::uint64_t begin, std::uint64_t end, bool take);

  void append_merged(std::vector<segment>& out, segment&& s);
  segment fresh_segment(std::uint64_t begin, std::uint64_t end, const access_entry& entry,
                        clock_view clock);

  void apply_search(std::uint64_t begin, std::uint64_t end, const access_entry& entry,
                    const vector_clock& clock, std::vector<history_conflict>& conflicts);
  void apply_general(std::vector<segment>& segments, std::uint64_t begin, std::uint64_t end,
                     const access_entry& entry, const vector_clock& clock,
                     std::vector<history_conflict>& conflicts, std::size_t first);
  // Note [A batch splices in place]: the kept runs of a chunk and the
  // pieces built in scratch_, in their order in the chunk to be.
  struct splice_part {
    std::size_t from = 0;   // into the chunk, or into scratch_ when `fresh`
    std::size_t count = 0;
    bool fresh = false;
  };
  class splice_builder;
  // The chunk becomes the parts in order; its segments not in a part are
  // dropped, scratch_ is left empty.
  void splice(std::vector<segment>& segments, std::span<const splice_part> parts);
  void merge_batch(std::vector<segment>& segments, std::span<const batch_access> accesses,
                   std::size_t offset, const vector_clock& clock,
                   std::vector<history_conflict>& conflicts, std::vector<conflict_slice>& slices);
  // Note [The same footprint again]: false, changing nothing, unless every
  // access covers exactly one segment.
  bool apply_batch_exact(std::vector<segment>& segments, std::span<const batch_access> accesses,
                         std::size_t offset, const vector_clock& clock,
                         std::vector<history_conflict>& conflicts,
                         std::vector<conflict_slice>& slices);

  // Note [A long history in chunks]. Chunk 0 is only_ when it is in use.
  std::span<const segment> chunk(std::size_t c) const noexcept {
    if (c != 0) return rest_[c - 1];
    if (has_only()) return {&only_, 1};
    return first_;
  }
  // Only where only_ is not in use (spill_only()).
  std::vector<segment>& chunk_vector(std::size_t c) noexcept {
    return c == 0 ? first_ : rest_[c - 1];
  }

  // Note [The only segment kept inside].
  bool has_only() const noexcept { return only_.begin <= only_.end; }
  // Before the chunks change: only_, if in use, becomes first_'s segment.
  void spill_only();
  // After: the history's only segment, if it has one, becomes only_.
  void settle_only() noexcept;
  void reset_only() noexcept { only_ = segment{unused_begin, 0, {}, {}, epoch{}, no_write}; }
  // The first chunk whose last segment ends after `at`, else the last (0
  // for an empty history, whose first chunk is then made).
  std::size_t chunk_for(std::uint64_t at) const noexcept;
  // Chunk c takes chunk c + 1's segments while `end` reaches past its own.
  void absorb_while_past(std::size_t c, std::uint64_t end);
  void absorb_next(std::size_t c);
  // After chunk c changed: cut if too large, absorb its successor if small.
  void rebalance(std::size_t c);

  // Note [The only segment kept inside]
  // Nearly every history is one segment (a tensor read and written whole),
  // and it lay in the first chunk's storage: an access loaded the chunk's
  // pointer from the allocation's first line, then the segment's line from
  // wherever the heap put it, one after the other. The only segment of a
  // history of one is kept here instead, the history's first line, which
  // an allocation puts right after its own (Note [What every access reads
  // of its allocation], allocation_table.h): its address is the
  // allocation's, so its line is fetched as soon as the allocation is
  // found (Note [Allocations found before they are checked],
  // memory_rules.cpp), not after a load. In use, it is the whole history:
  // first_ and rest_ are empty. Unused, its bounds are [UINT64_MAX, 0),
  // which no access has (an access's end is at least its begin). A change
  // of the chunks (apply_search, apply_batch) moves it into first_ first
  // (spill_only()) and back after, when one segment is left
  // (settle_only()), and first_ gives its storage back: a history of one
  // segment holds no chunk.
  // BM_EngineLaunches, release, `taskset -c 1`, interleaved runs, run by
  // run against the build before either change: 0.84 of its CPU time with
  // the allocations prefetched alone, 0.80 with this too (16 runs; 0.83
  // and 0.76 in 12 earlier ones). engine_replay under callgrind: 652.2 ->
  // 629.2 instructions per launch (no chunk's pointers to load), 13.72 ->
  // 13.76 L1 read misses (the segment's line is still one line).
  // The allocation grows by a line (448 -> 512 bytes), and a root of one
  // segment no longer holds a chunk: BM_EngineMemoryFlatness's heap
  // 1,079,104 -> 999,488 bytes at 1 M records.
  segment only_{unused_begin, 0, {}, {}, epoch{}, no_write};
  // What a write to the only segment reads next, in the line after it
  // (store_write, maybe_compact_writes). Note [The last write kept apart]:
  // the segments' last writes, and the size at which compact_writes()
  // runs next.
  std::vector<access_entry> writes_;
  std::size_t compact_at_ = min_compact_at;
  // chunk 0 unless only_ is in use: sorted by begin, non-overlapping.
  std::vector<segment> first_;
  std::vector<std::vector<segment>> rest_;  // chunks 1..: non-empty, each after the one before
  // Note [Chunk ends apart]: ends_[c] is chunk c's last end, for every
  // chunk but the last (as many as rest_).
  std::vector<std::uint64_t> ends_;
  std::vector<segment> scratch_;            // reused by apply_general and merge_batch
  std::vector<std::size_t> exact_at_;       // reused by apply_batch_exact
  std::vector<splice_part> parts_;          // reused by apply_general and merge_batch
  std::size_t chunk_target_ = default_chunk_target;

  static constexpr std::size_t min_compact_at = 16;
  static constexpr std::uint64_t unused_begin = UINT64_MAX;
  static constexpr access_entry never_written{};
};

}  // namespace streamsan
