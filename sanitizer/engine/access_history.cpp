#include "sanitizer/engine/access_history.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <utility>

namespace streamsan {
namespace {

using segment = access_history::segment;

}  // namespace

// Note [The last write kept apart]: the epochs first, the entries only when
// the indices differ (pieces of one segment share theirs).
bool access_history::same_state(const segment& a, const segment& b) const noexcept {
  return a.write_when == b.write_when &&
         (a.write == b.write || write_of(a) == write_of(b)) && a.reads == b.reads &&
         a.atomics == b.atomics;
}

access_history::segment access_history::part_of(segment& s, std::uint64_t begin,
                                                std::uint64_t end, bool take) {
  if (take) {
    return segment{begin, end, entry_set::take_or_copy(s.reads),
                   entry_set::take_or_copy(s.atomics), s.write_when, s.write};
  }
  return segment{begin, end, s.reads, s.atomics, s.write_when, s.write};
}

// The pieces of one previous access are usually contiguous: segments it
// spanned that later accesses split.
void access_history::note_conflict(std::vector<history_conflict>& out, std::size_t first,
                                   hazard kind, const access_entry& previous,
                                   std::uint64_t begin, std::uint64_t end) {
  for (std::size_t i = first; i < out.size(); ++i) {
    auto& c = out[i];
    if (c.kind == kind && c.previous == previous) {
      c.begin = std::min(c.begin, begin);
      c.end = std::max(c.end, end);
      return;
    }
  }
  out.push_back(history_conflict{kind, previous, begin, end});
}

void access_history::apply_search(std::uint64_t begin, std::uint64_t end,
                                  const access_entry& entry, const vector_clock& clock,
                                  std::vector<history_conflict>& conflicts) {
  if (begin >= end) return;
  spill_only();
  const std::size_t c = chunk_for(begin);
  std::vector<segment>& segments = chunk_vector(c);
  const auto it = std::partition_point(segments.begin(), segments.end(),
                                       [&](const segment& s) { return s.end <= begin; });
  if (it != segments.end() && it->begin == begin && it->end == end) {
    apply_exact(*it, entry, clock.view(), &conflicts);  // one of several segments
    settle_only();
    return;
  }
  const auto first = static_cast<std::size_t>(it - segments.begin());
  absorb_while_past(c, end);
  apply_general(chunk_vector(c), begin, end, entry, clock, conflicts, first);
  rebalance(c);
  settle_only();
  maybe_compact_writes();
}

void access_history::spill_only() {
  if (!has_only()) return;
  first_.push_back(std::move(only_));
  reset_only();
}

void access_history::settle_only() noexcept {
  if (first_.size() != 1 || !rest_.empty()) return;
  only_ = std::move(first_.front());
  std::vector<segment>().swap(first_);  // its storage was the segment's: the same bytes as before
}

void access_history::apply_general(std::vector<segment>& segments, std::uint64_t begin,
                                   std::uint64_t end, const access_entry& entry,
                                   const vector_clock& clock,
                                   std::vector<history_conflict>& conflicts, std::size_t first) {
  // Segments [first, last) overlap [begin, end). They are replaced by the
  // pieces built in scratch_: the untouched prefix of the first, the
  // accessed range (split at old boundaries for reads and atomics, one
  // piece for a write), gaps that had no history, and the untouched suffix
  // of the last.
  std::size_t last = first;
  while (last < segments.size() && segments[last].begin < end) ++last;
  const bool is_write = writes(entry.mode);
  const std::size_t first_conflict = conflicts.size();

  scratch_.clear();
  const auto emit = [&](segment&& s) { append_merged(scratch_, std::move(s)); };
  const auto fresh = [&](std::uint64_t b, std::uint64_t e) {
    return fresh_segment(b, e, entry, clock.view());
  };

  std::optional<segment> suffix;
  if (first < last) {
    segment& head = segments[first];
    if (head.begin < begin) emit(part_of(head, head.begin, begin, false));
    segment& tail = segments[last - 1];
    if (tail.end > end) suffix = part_of(tail, end, tail.end, false);
  }

  std::uint64_t pos = begin;
  for (std::size_t i = first; i < last; ++i) {
    segment& old = segments[i];
    const std::uint64_t b = std::max(old.begin, begin);
    const std::uint64_t e = std::min(old.end, end);
    check(old, b, e, entry.mode, clock.view(), conflicts, first_conflict);
    if (is_write) continue;  // one piece for the whole range, below
    if (b > pos) emit(fresh(pos, b));
    // The old segment is dropped after this (splice()), and the prefix and
    // suffix have their copies: its piece may take its sets' storage.
    segment piece = part_of(old, b, e, true);
    record(piece, entry, entry.mode, clock.view());
    emit(std::move(piece));
    pos = e;
  }
  if (is_write) {
    emit(fresh(begin, end));
  } else if (pos < end) {
    emit(fresh(pos, end));
  }
  if (suffix) emit(std::move(*suffix));

  parts_.clear();
  if (first > 0) parts_.push_back({0, first, false});
  parts_.push_back({0, scratch_.size(), true});
  if (last < segments.size()) parts_.push_back({last, segments.size() - last, false});
  splice(segments, parts_);
}

// Adjacent segments with one state are one (Note [Byte-exact shadow
// segments]).
void access_history::append_merged(std::vector<segment>& out, segment&& s) {
  if (!out.empty() && joins(out.back(), s)) {
    out.back().end = s.end;
  } else {
    out.push_back(std::move(s));
  }
}

// Bytes no access touched before, recorded as `entry`.
access_history::segment access_history::fresh_segment(std::uint64_t begin, std::uint64_t end,
                                                      const access_entry& entry,
                                                      clock_view clock) {
  segment s{begin, end, {}, {}, epoch{}, no_write};
  record(s, entry, entry.mode, clock);
  return s;
}

bool access_history::batchable(std::span<const batch_access> accesses) noexcept {
  for (std::size_t i = 1; i < accesses.size(); ++i) {
    if (accesses[i].begin < accesses[i - 1].end) return false;
  }
  return true;
}

// Note [A long history in chunks]: each run of accesses that lies within
// one chunk (after it absorbed the chunks an access reaches into) is merged
// with that chunk alone; chunks no access touches are not moved.
void access_history::apply_batch(std::span<const batch_access> accesses,
                                 const vector_clock& clock,
                                 std::vector<history_conflict>& conflicts,
                                 std::vector<conflict_slice>& slices) {
  spill_only();
  std::size_t i = 0;
  while (i < accesses.size()) {
    const std::size_t c = chunk_for(accesses[i].begin);
    std::size_t j = i;
    for (;;) {
      absorb_while_past(c, accesses[j].end);
      ++j;
      const bool last_chunk = c + 1 >= chunk_count();
      if (j == accesses.size() || (!last_chunk && accesses[j].begin >= chunk(c).back().end)) break;
    }
    if (!apply_batch_exact(chunk_vector(c), accesses.subspan(i, j - i), i, clock, conflicts,
                           slices)) {
      merge_batch(chunk_vector(c), accesses.subspan(i, j - i), i, clock, conflicts, slices);
    }
    rebalance(c);
    i = j;
  }
  settle_only();
  maybe_compact_writes();
}

// Note [The same footprint again]
// A kernel launched again over the same buffers leaves the same measured
// runs (a sparse solver's refactorization: cuSolverRf's 54,916 launches),
// and after its first launch each run is exactly a segment of the history.
// merge_batch rebuilt the whole chunk around them all the same, moving
// every segment of it: on a long history that was the engine's merge cost
// (docs/injection.md, cuSolverRf). When every access of the run covers
// exactly one segment, each is checked and recorded in place, as apply()
// does for one (apply_exact), and nothing moves; the segments' bounds
// stay, and only their states change. Otherwise nothing was changed and
// merge_batch runs.
bool access_history::apply_batch_exact(std::vector<segment>& segments,
                                       std::span<const batch_access> accesses,
                                       std::size_t offset, const vector_clock& clock,
                                       std::vector<history_conflict>& conflicts,
                                       std::vector<conflict_slice>& slices) {
  std::vector<std::size_t>& at = exact_at_;
  at.clear();
  auto from = segments.begin();
  for (const auto& a : accesses) {
    from = std::partition_point(from, segments.end(),
                                [&](const segment& s) { return s.end <= a.begin; });
    if (from == segments.end() || from->begin != a.begin || from->end != a.end) return false;
    at.push_back(static_cast<std::size_t>(from - segments.begin()));
  }
  for (std::size_t i = 0; i < accesses.size(); ++i) {
    const std::size_t first = conflicts.size();
    apply_exact(segments[at[i]], accesses[i].entry, clock.view(), &conflicts);
    if (conflicts.size() > first) slices.push_back({offset + i, first, conflicts.size()});
  }
  return true;
}

// Note [A batch splices in place]: the parts as they come, with
// append_merged's rule (Note [Byte-exact shadow segments]) between each
// and the segment before it, wherever either lies.
class access_history::splice_builder {
 public:
  // `into_pieces`: every segment kept goes into `pieces` too, which then
  // holds the whole chunk to be (Note [A dense batch builds a new array]).
  splice_builder(const access_history& history, std::vector<segment>& segments,
                 std::vector<segment>& pieces, std::vector<splice_part>& parts,
                 bool into_pieces) noexcept
      : history_(history),
        segments_(segments),
        pieces_(pieces),
        parts_(parts),
        into_pieces_(into_pieces) {}

  void piece(segment&& s) {
    if (segment* last = back(); last != nullptr && history_.joins(*last, s)) {
      last->end = s.end;
      return;
    }
    pieces_.push_back(std::move(s));
    if (!into_pieces_) append(pieces_.size() - 1, 1, true);
  }
  // The chunk's segment k, unless it joins the one before it.
  void keep(std::size_t k) {
    if (into_pieces_) {
      piece(std::move(segments_[k]));
      return;
    }
    if (segment* last = back(); last != nullptr && history_.joins(*last, segments_[k])) {
      last->end = segments_[k].end;
      return;
    }
    append(k, 1, false);
  }
  // [k, stop) as they are, only the first compared (Note [Untouched
  // segments go over in one move]).
  void keep_run(std::size_t k, std::size_t stop) {
    if (k >= stop) return;
    keep(k);
    if (stop == k + 1) return;
    if (!into_pieces_) {
      append(k + 1, stop - k - 1, false);
      return;
    }
    const auto from = segments_.begin() + static_cast<std::ptrdiff_t>(k + 1);
    const auto to = segments_.begin() + static_cast<std::ptrdiff_t>(stop);
    pieces_.insert(pieces_.end(), std::make_move_iterator(from), std::make_move_iterator(to));
  }

 private:
  segment* back() noexcept {
    if (into_pieces_) return pieces_.empty() ? nullptr : &pieces_.back();  // no parts kept
    if (parts_.empty()) return nullptr;
    const splice_part& p = parts_.back();
    return &(p.fresh ? pieces_ : segments_)[p.from + p.count - 1];
  }
  void append(std::size_t from, std::size_t count, bool fresh) {
    if (!parts_.empty()) {
      splice_part& p = parts_.back();
      if (p.fresh == fresh && p.from + p.count == from) {
        p.count += count;
        return;
      }
    }
    parts_.push_back({from, count, fresh});
  }

  const access_history& history_;
  std::vector<segment>& segments_;
  std::vector<segment>& pieces_;
  std::vector<splice_part>& parts_;
  bool into_pieces_;
};

// Note [Untouched segments go over in one move]
// Most of a chunk lies between a batch's accesses, untouched. Each such
// segment went through `cur` (a move into the optional, a move out, the
// optional's reset) and append_merged's comparison of two segments'
// states, epoch by epoch. A run of untouched segments is now kept in one
// part (Note [A batch splices in place]), and only its first is compared
// with what precedes it: two old neighbours stay apart as they were (their
// bytes' states are what they were either way). history_bench, release,
// host, two interleaved runs each: 1,024 accesses on a million segments
// 1.82-1.84 -> 1.55-1.67 ms, 64 of them 0.131-0.140 -> 0.120-0.122 ms, the
// gather unchanged (0.061 ms at 1,024; 41-43 -> 40-40.5 ms at 262,144).
//
// Note [A batch splices in place]
// merge_batch built the merged chunk in a second vector: every segment of
// the chunk moved into it and the vector was swapped in (or, for a batch
// touching less than half the chunk, the rebuilt span moved there and back,
// and everything after it moved again when the count changed), one element's
// move constructor at a time, and then every moved-from segment was
// destroyed. On cuSolverRf's --precise trace (971,361 merges of 4.1 accesses
// into a chunk of 175 segments on average, nearly all of them reads that
// split a segment at one end or both) those loops, vector::insert and
// replace_with_scratch were about a quarter of the replay (perf, host). Now
// the segments stay in the chunk: the walk below only decides what comes
// out, as parts in order (a run of the chunk's segments kept, or pieces it
// built in scratch_: splits, accessed pieces, fresh ones), and splice() puts
// the parts in place, each run with one memmove (Note [Segments relocate as
// bytes]). The segments before the first access do not move at all, those
// after it move once, by the count the batch added, and a piece moves once
// from the scratch. The history comes out as the rebuild left it, segment
// for segment, comparisons of states included (the old and the new walk
// dumped every segment after each step of 300 random histories alike).
// apply_general puts its pieces in the same way. `streamsan analyze` of that
// trace, release, host, five interleaved runs: 1.64-1.76 s of user time
// (median 1.73) -> 1.29-1.35 (1.31), 674 -> 696 MB resident (the chunks'
// room to grow, below).
// A segment an access consumes whole then gave its sets' storage to its
// last piece when a copy would allocate the same (entry_set::take_or_copy),
// here and in apply_general: no allocation and release per piece, and 665
// MB resident (the copies had given up the room of sets a write cleared;
// taking every set's storage, 705 MB). Four interleaved runs: 1.27-1.35 ->
// 1.23-1.30 s.
//
// Note [A dense batch builds a new array]
// A batch with an access for every few segments of its chunk (a gather
// over a scatter) makes most of the chunk pieces, and a splice moves each
// twice, into the scratch and into place; a chunk without room for what
// the batch may add (two pieces an access) moved every segment once more
// to grow. history_bench's gather over a scatter with the splice alone,
// against the rebuild before it (release, host, one run each, malloc's
// trimming off: otherwise it gave back and faulted in the heap's top in
// every iteration of either, at random, 0.05 -> 0.22-0.26 ms): 1,024
// 0.048 -> 0.067 ms, 65,536 5.7 -> 7.5 ms. Such a batch (more than one
// access per four segments, or no room) builds the chunk anew in the
// scratch as the rebuild did, each kept segment moved into it as it comes,
// and swaps it in: 1,024 0.046-0.048 -> 0.049-0.050 ms, 65,536 5.4-5.5 ->
// 5.6-5.9 ms, 262,144 28-31 -> 31-38 ms (three interleaved runs each). The
// cuSolverRf trace keeps its time (1.21-1.27 against 1.22-1.27 s, four
// interleaved runs).
//
// Note [Many accesses merged in one pass], over one chunk. `offset` is the
// index of accesses[0] in the whole batch, for the slices. `cur` is the old
// segment being split (its begin moved past what was taken), `next` the
// first old segment not yet taken.
void access_history::merge_batch(std::vector<segment>& segments,
                                 std::span<const batch_access> accesses, std::size_t offset,
                                 const vector_clock& clock,
                                 std::vector<history_conflict>& conflicts,
                                 std::vector<conflict_slice>& slices) {
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  const std::size_t size = segments.size();
  // Note [A dense batch builds a new array]
  const bool rebuild = segments.capacity() < size + 2 * accesses.size() + 1 ||
                       4 * accesses.size() > size;
  scratch_.clear();
  scratch_.reserve((rebuild ? size : 0) + 2 * accesses.size() + 1);
  parts_.clear();
  splice_builder out(*this, segments, scratch_, parts_, rebuild);
  std::size_t next = 0;
  std::size_t cur = none;
  const auto old = [&]() -> std::size_t {
    if (cur == none && next < size) cur = next++;
    return cur;
  };
  // Note [Untouched segments go over in one move]
  const auto take_untouched = [&](std::size_t stop) {
    out.keep_run(next, stop);
    next = std::max(next, stop);
  };
  for (std::size_t i = 0; i < accesses.size(); ++i) {
    const batch_access& access = accesses[i];
    const std::uint64_t begin = access.begin;
    const std::uint64_t end = access.end;
    const access_entry& entry = access.entry;
    if (begin >= end) continue;
    const std::size_t first = conflicts.size();
    // What ends before the access goes over as it is: the rest of a split
    // segment, then the untouched run after it.
    if (cur != none && segments[cur].end <= begin) {
      out.keep(cur);
      cur = none;
    }
    if (cur == none) {
      const auto stop = std::partition_point(
          segments.begin() + static_cast<std::ptrdiff_t>(next), segments.end(),
          [&](const segment& s) { return s.end <= begin; });
      take_untouched(static_cast<std::size_t>(stop - segments.begin()));
    }
    std::size_t k = old();  // the first old segment that ends after `begin`, if any
    if (k != none && segments[k].begin < begin) {
      segment& s = segments[k];
      out.piece(part_of(s, s.begin, begin, false));
      s.begin = begin;
    }
    const bool is_write = writes(entry.mode);
    std::uint64_t pos = begin;
    while ((k = old()) != none && segments[k].begin < end) {
      segment& s = segments[k];
      const std::uint64_t b = s.begin;
      const std::uint64_t e = std::min(s.end, end);
      const bool whole = s.end <= end;  // consumed: its sets can go to the piece
      check(s, b, e, entry.mode, clock.view(), conflicts, first);
      if (!is_write) {
        if (b > pos) out.piece(fresh_segment(pos, b, entry, clock.view()));
        segment piece = part_of(s, b, e, whole);
        record(piece, entry, entry.mode, clock.view());
        out.piece(std::move(piece));
      }
      pos = e;
      if (!whole) {
        s.begin = end;
        break;
      }
      cur = none;  // kept nowhere: splice() drops it, or the old array goes
    }
    if (is_write) {
      out.piece(fresh_segment(begin, end, entry, clock.view()));
    } else if (pos < end) {
      out.piece(fresh_segment(pos, end, entry, clock.view()));
    }
    if (conflicts.size() > first) slices.push_back({offset + i, first, conflicts.size()});
  }
  if (cur != none) out.keep(cur);
  take_untouched(size);
  if (rebuild) {
    segments.swap(scratch_);
    scratch_.clear();  // what was taken from it, and what the batch consumed
  } else {
    splice(segments, parts_);
  }
}

// Note [Segments relocate as bytes]
// A segment owns its sets' storage through plain pointers (entry_set.h)
// and nothing points into a segment, so its bytes copied elsewhere are the
// same segment, and the bytes left behind must then be neither used nor
// destroyed: what libraries call trivially relocatable (folly's
// fbvector, Qt, C++26's P2786). splice() moves runs of segments that way,
// one memmove each, where a move constructor per segment copied and
// cleared field by field and a destructor per moved-from segment followed;
// the slots it leaves behind are overwritten or reset (forget()).
namespace {

constinit const segment empty_slot{};  // no initialization order to mind

void relocate(segment* to, segment* from, std::size_t n) noexcept {
  if (n == 0 || to == from) return;
  std::memmove(static_cast<void*>(to), static_cast<const void*>(from), n * sizeof(segment));
}

// Slots whose bytes went elsewhere (or were destroyed) own nothing again:
// empty sets are all a destructor reads. (A whole empty segment, 128 bytes
// of `rep stos` each, was half of splice()'s time.)
void forget(segment* first, std::size_t n) noexcept {
  for (segment* s = first; s != first + n; ++s) {
    ::new (static_cast<void*>(&s->reads)) entry_set();
    ::new (static_cast<void*>(&s->atomics)) entry_set();
  }
}

}  // namespace

void access_history::splice(std::vector<segment>& segments,
                            std::span<const splice_part> parts) {
  std::size_t size = 0;
  for (const auto& p : parts) size += p.count;
  // Growing in place needs the room; a new array takes every segment
  // through its move constructor. The rebuild's chunks took the scratch's
  // array, sized to each merge; a chunk now keeps its own and grows it by
  // a quarter of the target (doubling while small). On the cuSolverRf
  // trace, growth to the exact size: 1.66-1.71 s, 682 MB; this: 1.29-1.35
  // s, 696 MB; doubling: 1.28-1.32 s, 716 MB.
  if (size > segments.capacity()) segments.reserve(size + std::min(size, chunk_target_ / 4));
  // Segments in no part are destroyed; their slots are raw until a part
  // lands there or forget() resets them.
  std::size_t kept_to = 0;
  const auto drop = [&](std::size_t to) {
    for (; kept_to < to; ++kept_to) std::destroy_at(segments.data() + kept_to);
  };
  for (const auto& p : parts) {
    if (p.fresh) continue;
    drop(p.from);
    kept_to = p.from + p.count;
  }
  const std::size_t old_size = segments.size();
  drop(old_size);
  // Empty segments, overwritten below: copies of one (a value-initialized
  // segment each was a 128-byte `rep stos`, a sixth of splice()'s time).
  if (size > old_size) segments.resize(size, empty_slot);
  // Kept runs move left in order and right in reverse order, so that none
  // lands on one not yet moved; the pieces then fill the slots between.
  segment* const slots = segments.data();
  std::size_t at = 0;
  for (const auto& p : parts) {
    if (!p.fresh && at < p.from) relocate(slots + at, slots + p.from, p.count);
    at += p.count;
  }
  for (auto p = parts.rbegin(); p != parts.rend(); ++p) {
    at -= p->count;
    if (!p->fresh && at > p->from) relocate(slots + at, slots + p->from, p->count);
  }
  for (const auto& p : parts) {
    if (p.fresh) relocate(slots + at, scratch_.data() + p.from, p.count);
    at += p.count;
  }
  forget(scratch_.data(), scratch_.size());
  scratch_.clear();
  if (size < old_size) {
    forget(slots + size, old_size - size);
    segments.resize(size);
  }
}

// Note [Chunk ends apart]
// The search over the chunks read each probe's end through its vector's
// header and its last segment, a line of its own somewhere in the history;
// chunk_for was 4.4% of the cuSolverRf trace's replay (perf, host). The
// ends are now kept in one array beside the chunks, refreshed wherever a
// chunk changes (rebalance(), which every change ends with, and
// absorb_next()); AccessHistoryChunks' histories of up to hundreds of
// chunks would find a stale end. The replay, four interleaved runs: 1.31-1.33
// -> 1.25-1.29 s of user time.
std::size_t access_history::chunk_for(std::uint64_t at) const noexcept {
  // The last chunk when none ends after `at`.
  return static_cast<std::size_t>(std::upper_bound(ends_.begin(), ends_.end(), at) -
                                  ends_.begin());
}

void access_history::absorb_next(std::size_t c) {
  std::vector<segment>& into = chunk_vector(c);
  std::vector<segment>& next = rest_[c];  // chunk c + 1
  into.insert(into.end(), std::make_move_iterator(next.begin()),
              std::make_move_iterator(next.end()));
  rest_.erase(rest_.begin() + static_cast<std::ptrdiff_t>(c));
  ends_.erase(ends_.begin() + static_cast<std::ptrdiff_t>(c));  // c now ends where c + 1 did
}

void access_history::absorb_while_past(std::size_t c, std::uint64_t end) {
  while (c + 1 < chunk_count() && end > chunk(c).back().end) absorb_next(c);
}

void access_history::rebalance(std::size_t c) {
  std::vector<segment>& grown = chunk_vector(c);
  if (grown.size() < chunk_target_ / 4 && c + 1 < chunk_count()) absorb_next(c);
  if (chunk(c).size() <= 2 * chunk_target_) {
    if (c < ends_.size()) ends_[c] = chunk(c).back().end;
    return;
  }
  // Cut into chunks of chunk_target_ (the last one takes the remainder).
  std::vector<std::vector<segment>> cut;
  std::vector<segment>& whole = chunk_vector(c);
  for (std::size_t at = chunk_target_; at < whole.size(); at += chunk_target_) {
    const std::size_t to = whole.size() - at < 2 * chunk_target_ ? whole.size() : at + chunk_target_;
    cut.emplace_back(std::make_move_iterator(whole.begin() + static_cast<std::ptrdiff_t>(at)),
                     std::make_move_iterator(whole.begin() + static_cast<std::ptrdiff_t>(to)));
    if (to == whole.size()) break;
  }
  whole.resize(chunk_target_);
  // A chunk that took a whole batch's merge may hold the capacity of a
  // million segments; one a little over its size keeps it for its growth.
  if (whole.capacity() > 8 * chunk_target_) whole.shrink_to_fit();
  rest_.insert(rest_.begin() + static_cast<std::ptrdiff_t>(c), std::make_move_iterator(cut.begin()),
               std::make_move_iterator(cut.end()));
  ends_.insert(ends_.begin() + static_cast<std::ptrdiff_t>(c), cut.size(), 0);
  for (std::size_t i = c; i < ends_.size() && i <= c + cut.size(); ++i) {
    ends_[i] = chunk(i).back().end;
  }
}

// Note [The last write kept apart]: the entries some segment holds move to
// the front in their order, and the segments' indices follow them. The
// next compaction waits for as many writes again as there are live ones,
// or an eighth of the segments (each compaction walks them all), or
// min_compact_at.
void access_history::compact_writes() {
  std::vector<write_ref> moved(writes_.size(), no_write);
  std::size_t segments = 0;
  for (std::size_t c = 0; c < chunk_count(); ++c) {
    segments += chunk(c).size();
    for (const segment& s : chunk(c)) {
      if (s.write != no_write) moved[s.write] = 0;  // live
    }
  }
  write_ref live = 0;
  for (write_ref r = 0; r < moved.size(); ++r) {
    if (moved[r] == no_write) continue;
    if (live != r) writes_[live] = writes_[r];  // live <= r: none overwritten before it moves
    moved[r] = live++;
  }
  const auto renumber = [&](segment& s) {
    if (s.write != no_write) s.write = moved[s.write];
  };
  if (has_only()) renumber(only_);
  for (segment& s : first_) renumber(s);
  for (auto& c : rest_) {
    for (segment& s : c) renumber(s);
  }
  writes_.resize(live);
  compact_at_ = live + std::max({min_compact_at, std::size_t{live}, segments / 8});
  if (writes_.capacity() > 2 * compact_at_) writes_.shrink_to_fit();
}

void access_history::find_unordered(std::uint64_t begin, std::uint64_t end,
                                    const vector_clock& clock,
                                    std::vector<history_conflict>& conflicts) const {
  if (begin >= end) return;
  const std::size_t first_conflict = conflicts.size();
  for (std::size_t c = chunk_for(begin); c < chunk_count(); ++c) {
    const std::span<const segment> segments = chunk(c);
    auto it = std::partition_point(segments.begin(), segments.end(),
                                   [&](const segment& s) { return s.end <= begin; });
    for (; it != segments.end() && it->begin < end; ++it) {
      check(*it, std::max(it->begin, begin), std::min(it->end, end), access_mode::write,
            clock.view(), conflicts, first_conflict);
    }
    if (it != segments.end()) return;  // a segment past `end`
  }
}

void access_history::clear() noexcept {
  reset_only();
  std::vector<segment>().swap(first_);
  std::vector<std::vector<segment>>().swap(rest_);
  std::vector<std::uint64_t>().swap(ends_);
  std::vector<segment>().swap(scratch_);
  std::vector<access_entry>().swap(writes_);
  compact_at_ = min_compact_at;
}

std::size_t access_history::segment_count() const noexcept {
  std::size_t n = (has_only() ? 1 : 0) + first_.size();
  for (const auto& c : rest_) n += c.size();
  return n;
}

std::vector<access_history::segment_state> access_history::segments() const {
  std::vector<segment_state> all;
  all.reserve(segment_count());
  for_each_segment([&](const segment& s) {
    all.push_back(segment_state{s.begin, s.end, s.reads, s.atomics, write_of(s)});
  });
  return all;
}

std::size_t access_history::read_count() const noexcept {
  std::size_t n = 0;
  for_each_segment([&](const segment& s) { n += s.reads.size(); });
  return n;
}

std::size_t access_history::atomic_count() const noexcept {
  std::size_t n = 0;
  for_each_segment([&](const segment& s) { n += s.atomics.size(); });
  return n;
}

std::size_t access_history::bytes_held() const noexcept {
  std::size_t bytes = scratch_.capacity() * sizeof(segment);
  bytes += writes_.capacity() * sizeof(access_entry);
  bytes += rest_.capacity() * sizeof(std::vector<segment>);
  bytes += ends_.capacity() * sizeof(std::uint64_t);
  bytes += first_.capacity() * sizeof(segment);  // only_ is in the history itself
  for (const auto& c : rest_) bytes += c.capacity() * sizeof(segment);
  for_each_segment([&](const segment& s) {
    bytes += (s.reads.capacity() + s.atomics.capacity()) * sizeof(access_entry);
  });
  return bytes;
}

}  // namespace streamsan
