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
  const auto it = std::partition_point(segments_.begin(), segments_.end(),
                                       [&](const segment& s) { return s.end <= begin; });
  if (it != segments_.end() && it->begin == begin && it->end == end) {
    apply_exact(*it, entry, clock.view(), conflicts);  // one of several segments
    return;
  }
  apply_general(begin, end, entry, clock, conflicts,
                static_cast<std::size_t>(it - segments_.begin()));
}

void access_history::apply_general(std::uint64_t begin, std::uint64_t end,
                                   const access_entry& entry, const vector_clock& clock,
                                   std::vector<history_conflict>& conflicts,
                                   std::size_t first) {
  // Segments [first, last) overlap [begin, end). They are replaced by the
  // pieces built in scratch_: the untouched prefix of the first, the
  // accessed range (split at old boundaries for reads and atomics, one
  // piece for a write), gaps that had no history, and the untouched suffix
  // of the last.
  std::size_t last = first;
  while (last < segments_.size() && segments_[last].begin < end) ++last;
  const bool is_write = writes(entry.mode);
  const std::size_t first_conflict = conflicts.size();

  scratch_.clear();
  const auto emit = [&](segment&& s) { append_merged(scratch_, std::move(s)); };
  const auto fresh = [&](std::uint64_t b, std::uint64_t e) {
    return fresh_segment(b, e, entry, clock.view());
  };

  std::optional<segment> suffix;
  if (first < last) {
    const segment& head = segments_[first];
    if (head.begin < begin) emit(segment{head.begin, begin, head.reads, head.atomics, head.write});
    const segment& tail = segments_[last - 1];
    if (tail.end > end) suffix = segment{end, tail.end, tail.reads, tail.atomics, tail.write};
  }

  std::uint64_t pos = begin;
  for (std::size_t i = first; i < last; ++i) {
    const segment& old = segments_[i];
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

  const std::size_t old_count = last - first;
  const std::size_t new_count = scratch_.size();
  const std::size_t common = std::min(old_count, new_count);
  std::move(scratch_.begin(), scratch_.begin() + static_cast<std::ptrdiff_t>(common),
            segments_.begin() + static_cast<std::ptrdiff_t>(first));
  if (new_count < old_count) {
    segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(first + new_count),
                    segments_.begin() + static_cast<std::ptrdiff_t>(last));
  } else if (new_count > old_count) {
    segments_.insert(segments_.begin() + static_cast<std::ptrdiff_t>(first + common),
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

// Note [Many accesses merged in one pass]. `cur` is what is left of the old
// segment being split; `next` the first old segment not yet taken.
void access_history::apply_batch(std::span<const batch_access> accesses,
                                 const vector_clock& clock,
                                 std::vector<history_conflict>& conflicts,
                                 std::vector<conflict_slice>& slices) {
  std::vector<segment> merged;
  merged.reserve(segments_.size() + 2 * accesses.size() + 1);
  const auto emit = [&](segment&& s) { append_merged(merged, std::move(s)); };
  std::size_t next = 0;
  std::optional<segment> cur;
  const auto old = [&]() -> segment* {
    if (!cur && next < segments_.size()) cur = std::move(segments_[next++]);
    return cur ? &*cur : nullptr;
  };
  for (std::size_t i = 0; i < accesses.size(); ++i) {
    const auto& [begin, end, entry] = accesses[i];
    if (begin >= end) continue;
    const auto fresh = [&](std::uint64_t b, std::uint64_t e) {
      return fresh_segment(b, e, entry, clock.view());
    };
    const std::size_t first = conflicts.size();
    segment* s = nullptr;
    while ((s = old()) != nullptr && s->end <= begin) {
      emit(std::move(*s));
      cur.reset();
    }
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
    if (conflicts.size() > first) slices.push_back({i, first, conflicts.size()});
  }
  if (cur) emit(std::move(*cur));
  for (; next < segments_.size(); ++next) emit(std::move(segments_[next]));
  segments_.swap(merged);
}

void access_history::find_unordered(std::uint64_t begin, std::uint64_t end,
                                    const vector_clock& clock,
                                    std::vector<history_conflict>& conflicts) const {
  if (begin >= end) return;
  const std::size_t first_conflict = conflicts.size();
  auto it = std::partition_point(segments_.begin(), segments_.end(),
                                 [&](const segment& s) { return s.end <= begin; });
  for (; it != segments_.end() && it->begin < end; ++it) {
    check(*it, std::max(it->begin, begin), std::min(it->end, end), access_mode::write,
          clock.view(), conflicts, first_conflict);
  }
}

void access_history::clear() noexcept {
  std::vector<segment>().swap(segments_);
  std::vector<segment>().swap(scratch_);
}

std::size_t access_history::read_count() const noexcept {
  std::size_t n = 0;
  for (const auto& s : segments_) n += s.reads.size();
  return n;
}

std::size_t access_history::atomic_count() const noexcept {
  std::size_t n = 0;
  for (const auto& s : segments_) n += s.atomics.size();
  return n;
}

std::size_t access_history::bytes_held() const noexcept {
  std::size_t bytes = (segments_.capacity() + scratch_.capacity()) * sizeof(segment);
  for (const auto& s : segments_) {
    bytes += (s.reads.capacity() + s.atomics.capacity()) * sizeof(access_entry);
  }
  return bytes;
}

}  // namespace streamsan
