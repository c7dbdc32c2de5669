#include "sanitizer/engine/access_history.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace streamsan {
namespace {

using segment = access_history::segment;

bool same_state(const segment& a, const segment& b) noexcept {
  return a.write == b.write && a.reads == b.reads && a.atomics == b.atomics;
}

}  // namespace

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
  const std::size_t c = chunk_for(begin);
  std::vector<segment>& segments = chunk(c);
  const auto it = std::partition_point(segments.begin(), segments.end(),
                                       [&](const segment& s) { return s.end <= begin; });
  if (it != segments.end() && it->begin == begin && it->end == end) {
    apply_exact(*it, entry, clock.view(), conflicts);  // one of several segments
    return;
  }
  const auto first = static_cast<std::size_t>(it - segments.begin());
  absorb_while_past(c, end);
  apply_general(chunk(c), begin, end, entry, clock, conflicts, first);
  rebalance(c);
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
    const segment& head = segments[first];
    if (head.begin < begin) emit(segment{head.begin, begin, head.reads, head.atomics, head.write});
    const segment& tail = segments[last - 1];
    if (tail.end > end) suffix = segment{end, tail.end, tail.reads, tail.atomics, tail.write};
  }

  std::uint64_t pos = begin;
  for (std::size_t i = first; i < last; ++i) {
    const segment& old = segments[i];
    const std::uint64_t b = std::max(old.begin, begin);
    const std::uint64_t e = std::min(old.end, end);
    check(old, b, e, entry.mode, clock.view(), conflicts, first_conflict);
    if (is_write) continue;  // one piece for the whole range, below
    if (b > pos) emit(fresh(pos, b));
    segment piece{b, e, old.reads, old.atomics, old.write};
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

  replace_with_scratch(segments, first, last);
}

// Segments [first, last) become scratch_'s: only the segments after them
// move, and only when the counts differ.
void access_history::replace_with_scratch(std::vector<segment>& segments, std::size_t first,
                                          std::size_t last) {
  const std::size_t old_count = last - first;
  const std::size_t new_count = scratch_.size();
  const std::size_t common = std::min(old_count, new_count);
  std::move(scratch_.begin(), scratch_.begin() + static_cast<std::ptrdiff_t>(common),
            segments.begin() + static_cast<std::ptrdiff_t>(first));
  if (new_count < old_count) {
    segments.erase(segments.begin() + static_cast<std::ptrdiff_t>(first + new_count),
                    segments.begin() + static_cast<std::ptrdiff_t>(last));
  } else if (new_count > old_count) {
    segments.insert(segments.begin() + static_cast<std::ptrdiff_t>(first + common),
                     std::make_move_iterator(scratch_.begin() +
                                             static_cast<std::ptrdiff_t>(common)),
                     std::make_move_iterator(scratch_.end()));
  }
}

// Adjacent segments with one state are one (Note [Byte-exact shadow
// segments]).
void access_history::append_merged(std::vector<segment>& out, segment&& s) {
  if (!out.empty() && out.back().end == s.begin && same_state(out.back(), s)) {
    out.back().end = s.end;
  } else {
    out.push_back(std::move(s));
  }
}

// Bytes no access touched before, recorded as `entry`.
access_history::segment access_history::fresh_segment(std::uint64_t begin, std::uint64_t end,
                                                      const access_entry& entry,
                                                      clock_view clock) {
  segment s{begin, end, {}, {}, access_entry{}};
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
    if (!apply_batch_exact(chunk(c), accesses.subspan(i, j - i), i, clock, conflicts, slices)) {
      merge_batch(chunk(c), accesses.subspan(i, j - i), i, clock, conflicts, slices);
    }
    rebalance(c);
    i = j;
  }
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
    apply_exact(segments[at[i]], accesses[i].entry, clock.view(), conflicts);
    if (conflicts.size() > first) slices.push_back({offset + i, first, conflicts.size()});
  }
  return true;
}

// Note [Untouched segments go over in one move]
// Most of a chunk lies between a batch's accesses, untouched. Each such
// segment went through `cur` (a move into the optional, a move out, the
// optional's reset) and append_merged's comparison of two segments'
// states, epoch by epoch. A run of untouched segments is now moved into
// the new vector in one insertion, and only its first is compared with
// what precedes it: two old neighbours stay apart as they were (their
// bytes' states are what they were either way). history_bench, release,
// host, two interleaved runs each: 1,024 accesses on a million segments
// 1.82-1.84 -> 1.55-1.67 ms, 64 of them 0.131-0.140 -> 0.120-0.122 ms, the
// gather unchanged (0.061 ms at 1,024; 41-43 -> 40-40.5 ms at 262,144).
//
// Note [Many accesses merged in one pass], over one chunk. `offset` is the
// index of accesses[0] in the whole batch, for the slices. `cur` is what is
// left of the old segment being split; `next` the first old segment not yet
// taken.
void access_history::merge_batch(std::vector<segment>& segments,
                                 std::span<const batch_access> accesses, std::size_t offset,
                                 const vector_clock& clock,
                                 std::vector<history_conflict>& conflicts,
                                 std::vector<conflict_slice>& slices) {
  // Note [A batch rebuilds only what it touches]
  // Asked first: the searches read segments a copied history has cold.
  const bool room = segments.capacity() >= segments.size() + 2 * accesses.size() + 1;
  // Plain variables, not a structured binding: the lambdas below use them,
  // and clang before 16 cannot capture a binding (the fuzz build).
  const auto range = room ? touched_range(segments, accesses)
                          : std::pair<std::size_t, std::size_t>{0, segments.size()};
  std::size_t lo = range.first;
  std::size_t hi = range.second;
  const bool whole = !room || 2 * (hi - lo) > segments.size();
  if (whole) {
    lo = 0;
    hi = segments.size();
  }
  std::vector<segment>& merged = scratch_;
  merged.clear();
  merged.reserve(hi - lo + 2 * accesses.size() + 1);
  const auto emit = [&](segment&& s) { append_merged(merged, std::move(s)); };
  std::size_t next = lo;
  std::optional<segment> cur;
  const auto old = [&]() -> segment* {
    if (!cur && next < hi) cur = std::move(segments[next++]);
    return cur ? &*cur : nullptr;
  };
  // Note [Untouched segments go over in one move]
  const auto take_untouched = [&](std::size_t stop) {
    if (next >= stop) return;
    emit(std::move(segments[next++]));
    const auto from = segments.begin() + static_cast<std::ptrdiff_t>(next);
    const auto to = segments.begin() + static_cast<std::ptrdiff_t>(stop);
    merged.insert(merged.end(), std::make_move_iterator(from), std::make_move_iterator(to));
    next = stop;
  };
  for (std::size_t i = 0; i < accesses.size(); ++i) {
    // Plain names, not a structured binding: `fresh` captures `entry`
    // (see lo and hi).
    const batch_access& access = accesses[i];
    const std::uint64_t begin = access.begin;
    const std::uint64_t end = access.end;
    const access_entry& entry = access.entry;
    if (begin >= end) continue;
    const auto fresh = [&](std::uint64_t b, std::uint64_t e) {
      return fresh_segment(b, e, entry, clock.view());
    };
    const std::size_t first = conflicts.size();
    // What ends before the access goes over as it is: the rest of a split
    // segment, then the untouched run after it.
    if (cur && cur->end <= begin) {
      emit(std::move(*cur));
      cur.reset();
    }
    if (!cur) {
      std::size_t stop = next;
      while (stop < hi && segments[stop].end <= begin) ++stop;
      take_untouched(stop);
    }
    segment* s = old();  // the first old segment that ends after `begin`, if any
    if (s != nullptr && s->begin < begin) {
      emit(segment{s->begin, begin, s->reads, s->atomics, s->write});
      s->begin = begin;
    }
    const bool is_write = writes(entry.mode);
    std::uint64_t pos = begin;
    while ((s = old()) != nullptr && s->begin < end) {
      const std::uint64_t b = s->begin;
      const std::uint64_t e = std::min(s->end, end);
      check(*s, b, e, entry.mode, clock.view(), conflicts, first);
      if (!is_write) {
        if (b > pos) emit(fresh(pos, b));
        segment piece{b, e, s->reads, s->atomics, s->write};
        record(piece, entry, entry.mode, clock.view());
        emit(std::move(piece));
      }
      pos = e;
      if (s->end > end) {
        s->begin = end;
        break;
      }
      cur.reset();
    }
    if (is_write) {
      emit(fresh(begin, end));
    } else if (pos < end) {
      emit(fresh(pos, end));
    }
    if (conflicts.size() > first) slices.push_back({offset + i, first, conflicts.size()});
  }
  if (cur) emit(std::move(*cur));
  take_untouched(hi);
  if (whole) {
    segments.swap(merged);
  } else {
    replace_with_scratch(segments, lo, hi);
  }
}

// Note [A batch rebuilds only what it touches]
// merge_batch rebuilt the whole chunk around a batch's accesses, moving
// each of its segments (128 bytes: two cache lines with both sets' moves)
// into the scratch and back: a CPU-time profile of cuSolverRf under
// --precise put about 40% of the engine's thread in those moves (H200,
// 2026-11-30). Now it rebuilds only the segments from the one before the
// first it touches to the one after the last (the neighbours go through
// the merge so that a piece with their state joins them as before: the
// history comes out exactly as a whole rebuild leaves it), and puts the
// result in their place; the segments after them move only when the
// count changes, and those before never do. A batch that touches more
// than half the chunk still rebuilds all of it: putting the result back
// moves each touched segment a second time, where the whole rebuild hands
// its new vector over in one swap (history_bench's gather over a scatter,
// which touches every segment, took 4 times as long with the splice). So
// does a chunk without the capacity for what the batch may add: growing it
// in place would allocate a new array and move every segment into it,
// where the rebuild's scratch is one kept from earlier rebuilds.
// [the segment before the first one the batch's accesses reach, one past
// the segment after the last one).
std::pair<std::size_t, std::size_t> access_history::touched_range(
    const std::vector<segment>& segments, std::span<const batch_access> accesses) noexcept {
  std::uint64_t begin = accesses.front().begin, end = accesses.back().end;
  for (const auto& a : accesses) {
    begin = std::min(begin, a.begin);
    end = std::max(end, a.end);
  }
  const auto from = std::partition_point(segments.begin(), segments.end(),
                                         [&](const segment& s) { return s.end <= begin; });
  const auto to = std::partition_point(from, segments.end(),
                                       [&](const segment& s) { return s.begin < end; });
  const auto first = static_cast<std::size_t>(from - segments.begin());
  const auto last = static_cast<std::size_t>(to - segments.begin());
  return {first == 0 ? 0 : first - 1, last == segments.size() ? last : last + 1};
}

std::size_t access_history::chunk_for(std::uint64_t at) const noexcept {
  std::size_t lo = 0, hi = chunk_count();
  if (hi <= 1) return 0;
  hi -= 1;  // the last chunk when none ends after `at`
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (chunk(mid).back().end <= at) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

void access_history::absorb_next(std::size_t c) {
  std::vector<segment>& into = chunk(c);
  std::vector<segment>& next = rest_[c];  // chunk c + 1
  into.insert(into.end(), std::make_move_iterator(next.begin()),
              std::make_move_iterator(next.end()));
  rest_.erase(rest_.begin() + static_cast<std::ptrdiff_t>(c));
}

void access_history::absorb_while_past(std::size_t c, std::uint64_t end) {
  while (c + 1 < chunk_count() && end > chunk(c).back().end) absorb_next(c);
}

void access_history::rebalance(std::size_t c) {
  std::vector<segment>& grown = chunk(c);
  if (grown.size() < chunk_target_ / 4 && c + 1 < chunk_count()) absorb_next(c);
  if (chunk(c).size() <= 2 * chunk_target_) return;
  // Cut into chunks of chunk_target_ (the last one takes the remainder).
  std::vector<std::vector<segment>> cut;
  std::vector<segment>& whole = chunk(c);
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
}

void access_history::find_unordered(std::uint64_t begin, std::uint64_t end,
                                    const vector_clock& clock,
                                    std::vector<history_conflict>& conflicts) const {
  if (begin >= end) return;
  const std::size_t first_conflict = conflicts.size();
  for (std::size_t c = chunk_for(begin); c < chunk_count(); ++c) {
    const std::vector<segment>& segments = chunk(c);
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
  std::vector<segment>().swap(first_);
  std::vector<std::vector<segment>>().swap(rest_);
  std::vector<segment>().swap(scratch_);
}

std::size_t access_history::segment_count() const noexcept {
  std::size_t n = first_.size();
  for (const auto& c : rest_) n += c.size();
  return n;
}

std::vector<access_history::segment> access_history::segments() const {
  std::vector<segment> all;
  all.reserve(segment_count());
  for (std::size_t c = 0; c < chunk_count(); ++c) {
    all.insert(all.end(), chunk(c).begin(), chunk(c).end());
  }
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
  bytes += rest_.capacity() * sizeof(std::vector<segment>);
  for (std::size_t c = 0; c < chunk_count(); ++c) bytes += chunk(c).capacity() * sizeof(segment);
  for_each_segment([&](const segment& s) {
    bytes += (s.reads.capacity() + s.atomics.capacity()) * sizeof(access_entry);
  });
  return bytes;
}

}  // namespace streamsan
