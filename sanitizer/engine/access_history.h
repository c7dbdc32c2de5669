// What happened to the bytes of one root allocation: for every byte range,
// the last write and the reads since it.
//
// Note [Byte-exact shadow segments]
// ThreadSanitizer keeps a few shadow cells per 8 application bytes. Device
// buffers are large and are accessed a whole tensor (or a tile) at a time, so
// the history here is a sorted vector of non-overlapping byte segments
// [begin, end), each with one state: the last write and the reads since it.
// An access that covers part of a segment splits it, so conflicts are byte
// exact: two streams writing disjoint halves of one buffer never conflict,
// and a partial overlap conflicts on exactly the overlapping bytes. After a
// write, the whole written range has one state again and becomes a single
// segment (adjacent segments with equal state are merged), so the number of
// segments is bounded by the distinct boundaries live accesses use, not by
// the length of the log.
//
// Note [Bounded read sets]
// A read drops every earlier read that happens before it (TSan does the same
// with its shadow cells): such a read is redundant, because anything that
// races with it also races with the new read or is ordered after both. All
// reads of one context are ordered, so a segment holds at most one read per
// context, and a write clears the set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/engine/vector_clock.h"
#include "sanitizer/log/record.h"

namespace streamsan {

// Who made an access: its epoch (for ordering) and what a report needs to
// describe it. The stream or thread follows from the epoch's slot.
struct access_entry {
  epoch when;
  std::uint64_t seq = 0;
  std::uint64_t offset = 0;  // the access's range, relative to `alloc`
  std::uint64_t size = 0;
  alloc_id alloc{};
  string_id name{};
  stack_id stack{};
  string_id nvtx{};
  thread_id thread{};
  graph_id graph{};
  std::uint32_t graph_node = 0;
  operation_kind op = operation_kind::kernel;
  access_mode mode = access_mode::read;

  friend bool operator==(const access_entry&, const access_entry&) = default;
};

// A previous access the current one is not ordered after.
struct history_conflict {
  hazard kind = hazard::none;
  access_entry previous;
  std::uint64_t begin = 0;  // the bytes in conflict, in root coordinates
  std::uint64_t end = 0;
};

class access_history {
 public:
  // Checks the access [begin, end) with `mode` by the context whose clock is
  // `clock` against the history, appends the conflicts to `conflicts` (one
  // per previous access and hazard, with the hull of the bytes in conflict),
  // and records the access.
  [[gnu::always_inline]] void apply(std::uint64_t begin, std::uint64_t end,
                                    const access_entry& entry, const vector_clock& clock,
                                    std::vector<history_conflict>& conflicts) {
    // The common case, inline: the access covers exactly the only segment
    // (the same whole tensor as last time). No search, split or merge.
    if (segments_.size() == 1) [[likely]] {
      segment& s = segments_.front();
      if (s.begin == begin && s.end == end) [[likely]] {
        apply_exact(s, entry, clock.view(), conflicts);
        return;
      }
    }
    apply_search(begin, end, entry, clock, conflicts);
  }

  // Appends every access to [begin, end) that `clock` does not cover, as if
  // a write at `clock` happened (a free: Note [Frees check like writes]).
  void find_unordered(std::uint64_t begin, std::uint64_t end, const vector_clock& clock,
                      std::vector<history_conflict>& conflicts) const;

  void clear() noexcept;

  struct segment {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    access_entry write;  // write.when.is_none(): never written
    std::vector<access_entry> reads;
  };
  const std::vector<segment>& segments() const noexcept { return segments_; }
  // Visits every stored access: each segment's last write (possibly none)
  // and its reads. The sweep of Note [Retiring context slots] relies on it
  // seeing every epoch the history holds.
  template <class F>
  void for_each_entry(F&& f) const {
    for (const auto& s : segments_) {
      f(s.write);
      for (const auto& r : s.reads) f(r);
    }
  }
  std::size_t read_count() const noexcept;
  std::size_t bytes_held() const noexcept;

 private:
  // One segment exactly covered by the access: check, then record.
  [[gnu::always_inline]] static void apply_exact(segment& s, const access_entry& entry, clock_view clock,
                          std::vector<history_conflict>& conflicts) {
    if (writes(entry.mode)) {
      check(s, s.begin, s.end, true, clock, conflicts, conflicts.size());
      s.write = entry;
      s.reads.clear();
    } else {
      check(s, s.begin, s.end, false, clock, conflicts, conflicts.size());
      record_read(s, entry, clock);
    }
  }

  // A read conflicts with the last write (RAW); a write with the last write
  // (WAW) and with every read since (WAR). Only accesses the current context
  // is not ordered after count.
  static void check(const segment& s, std::uint64_t begin, std::uint64_t end, bool is_write,
                    clock_view clock, std::vector<history_conflict>& out, std::size_t first) {
    if (!clock.covers(s.write.when) && !s.write.when.is_none()) [[unlikely]] {
      note_conflict(out, first,
                    is_write ? hazard::write_after_write : hazard::read_after_write, s.write,
                    begin, end);
    }
    if (!is_write) return;
    for (const auto& r : s.reads) {
      if (!clock.covers(r.when)) [[unlikely]] {
        note_conflict(out, first, hazard::write_after_read, r, begin, end);
      }
    }
  }

  // Note [Bounded read sets]. The new read takes the place of the first read
  // it is ordered after; further such reads are swapped out with the last
  // one (the order of a read set carries no meaning).
  static void record_read(segment& s, const access_entry& entry, clock_view clock) {
    auto& reads = s.reads;
    bool placed = false;
    for (std::size_t i = 0; i < reads.size();) {
      if (!clock.covers(reads[i].when)) {
        ++i;
      } else if (!placed) {
        reads[i++] = entry;
        placed = true;
      } else {
        if (i + 1 != reads.size()) reads[i] = reads.back();
        reads.pop_back();
      }
    }
    if (!placed) reads.push_back(entry);
  }

  // One conflict per (hazard, previous access) within one apply call; its
  // bytes are the hull of the pieces found.
  [[gnu::cold]] static void note_conflict(std::vector<history_conflict>& out, std::size_t first,
                                          hazard kind, const access_entry& previous,
                                          std::uint64_t begin, std::uint64_t end);

  void apply_search(std::uint64_t begin, std::uint64_t end, const access_entry& entry,
                    const vector_clock& clock, std::vector<history_conflict>& conflicts);
  void apply_general(std::uint64_t begin, std::uint64_t end, const access_entry& entry,
                     const vector_clock& clock, std::vector<history_conflict>& conflicts,
                     std::size_t first);

  std::vector<segment> segments_;  // sorted by begin, non-overlapping
  std::vector<segment> scratch_;   // reused by apply_general
};

}  // namespace streamsan
