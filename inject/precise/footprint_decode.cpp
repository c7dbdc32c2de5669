#include "inject/precise/footprint_decode.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

namespace streamsan::precise {
namespace {

bool is_one_run(const page_summary& s) {
  const std::uint32_t begin = page_bytes - s.first;
  return s.end > begin && s.end - begin == s.bytes;
}

void fetch_or_throw(const fetch_fn& fetch, void* out, std::uint64_t source, std::size_t size,
                    const char* what) {
  if (size == 0) return;
  if (!fetch(out, source, size)) {
    throw std::runtime_error(std::string("reading the footprint table's ") + what + " (" +
                             std::to_string(size) + " bytes) failed");
  }
}

// Extends `last` by `i` when `i` continues or overlaps it with the same
// kind; false (and `last` as it was) otherwise.
bool merged_into(measured_interval& last, const measured_interval& i) {
  if (last.kind != i.kind || i.begin > last.end || i.end < last.begin) return false;
  last.begin = std::min(last.begin, i.begin);
  last.end = std::max(last.end, i.end);
  return true;
}

// Appends `i` to `out`, extending the last interval instead when `i`
// continues or overlaps it with the same kind.
void append_merged(std::vector<measured_interval>& out, const measured_interval& i) {
  if (out.empty() || !merged_into(out.back(), i)) out.push_back(i);
}

// Sorts slot keys (kind << 62 | page << slot_bits | slot) by kind and
// page: a least-significant-digit radix sort over the bits above the slot,
// a byte a pass, passing over the bytes in which all keys agree (a launch's
// pages usually differ in two or three of them). The keys come in hash
// order, which is no order at all: std::sort took 10 to 14 ms for the
// triad's 49,152 pages on the 2-core host, against 4 to 6 for the same
// pages handed out in insertion order, nearly sorted already.
void sort_by_kind_and_page(std::vector<std::uint64_t>& keys, std::vector<std::uint64_t>& other) {
  constexpr std::uint32_t first_byte = slot_bits / 8;  // the slot is payload
  constexpr std::uint32_t bytes = 8 - first_byte;
  std::array<std::array<std::size_t, 256>, bytes> counts{};
  for (const std::uint64_t k : keys) {
    for (std::uint32_t b = 0; b < bytes; ++b) ++counts[b][(k >> (8 * (first_byte + b))) & 0xff];
  }
  other.resize(keys.size());
  for (std::uint32_t b = 0; b < bytes; ++b) {
    auto& count = counts[b];
    const std::uint32_t shift = 8 * (first_byte + b);
    if (!keys.empty() && count[(keys[0] >> shift) & 0xff] == keys.size()) continue;
    std::size_t at = 0;
    for (auto& c : count) at += std::exchange(c, at);
    for (const std::uint64_t k : keys) other[count[(k >> shift) & 0xff]++] = k;
    keys.swap(other);
  }
}

// Note [Slots decoded in page order]
// Slots lie where their keys hashed, so a streaming kernel's tens of
// thousands of one-run pages would come out of page_intervals unordered,
// and sorting those intervals was most of a large launch's decoding, which
// the memory-bound triad under --precise spends per launch on the
// program's thread (bench/precise/decode_bench, 49,152 pages, on the
// 2-core host: 7.7 to 8.1 ms). Instead the used slots are sorted by one
// integer, kind, page and an index (a page takes 38 bits and the index
// 24: Note [The slot is the bucket]), with a radix sort, and a page's runs
// that continue the previous page's extend its interval: what is left for
// coalesce() is one interval per run. With slots handed out in insertion
// order and std::sort, 4.8 to 5.3 ms; with slots where their keys hash,
// the radix sort and the summaries read into memory nobody clears first,
// 3.1 to 3.4 ms (3 interleaved runs each). A key naming a page no slot can
// hold, or no kind, was not written by the patch code: `intact` turns
// false and the slot is left out.
//
// Note [What a page needs, beside its key]
// The index in the sort key is not the slot but the page's place in a
// dense array of 32-bit words filled in slot order while the summaries are
// scanned: a one-run page's offsets (what its interval needs), or the slot
// of a page whose bitmap was read. Walking the pages in page order then
// reads that array (4 bytes a page, which stays in cache) instead of each
// page's 24-byte summary where its key hashed (the triad's 3 MB of
// summaries, one cache miss or two a page): callgrind counted 165,843 L1
// and 125,123 last-level read misses in decode_footprint's own code for
// 49,152 pages before. decode_bench's 49,152 pages: 3.38 ms of CPU time
// before, 1.96 ms after (2-core host, median of 3).
constexpr std::uint32_t index_mask = (1u << slot_bits) - 1;
constexpr std::uint32_t page_fragmented = 1u << 31;  // low bits: the slot
constexpr std::uint32_t page_untouched = 1u << 30;   // a slot with no bytes
constexpr std::uint32_t offset_bits = page_shift + 1;  // 0 to page_bytes

std::uint32_t page_word(const page_summary& s, std::uint32_t slot) {
  if (s.bytes == 0) return page_untouched;
  if (!is_one_run(s)) return page_fragmented | slot;
  return (page_bytes - s.first) | s.end << offset_bits;
}

// The summaries read back: the main region's, and the spill region's when
// a key took one of its slots (Note [The room to grow is read only when
// used] in footprint_layout.h), slot by slot as the table numbers them.
struct read_summaries {
  std::span<const page_summary> main;
  std::span<const page_summary> spill;

  const page_summary& operator[](std::uint32_t slot) const {
    return slot < main.size() ? main[slot] : spill[slot - main.size()];
  }
};

// Appends to out.keys (kind << 62 | page << slot_bits | index; sorted later
// by sort_by_kind_and_page), out.words (by index: page_word()) and
// out.fragmented (the slots whose bitmaps are needed, ascending) the used
// slots of `slots`, the first of which is slot `first_slot`.
void scan_slots(std::span<const page_summary> slots, std::uint32_t first_slot, bool& intact,
                decode_scratch& out) {
  for (std::uint32_t i = 0; i < slots.size(); ++i) {
    const std::uint32_t slot = first_slot + i;
    const std::uint64_t key = slots[i].key;
    if (key == 0) continue;
    if (page_of_key(key) > max_page || kind_of_key(key) >= kind_count) {
      intact = false;
      continue;
    }
    out.keys.push_back(std::uint64_t{kind_of_key(key)} << 62 | page_of_key(key) << slot_bits |
                       out.words.size());
    const std::uint32_t word = page_word(slots[i], slot);
    if ((word & page_fragmented) != 0) out.fragmented.push_back(slot);
    out.words.push_back(word);
  }
}

// The runs of fragmented slot `slot` (read_fragmented: the runs of
// s.fragmented[i] at [s.first[i], s.first[i + 1]) of s.runs).
std::span<const measured_interval> runs_of(const decode_scratch& s, std::uint32_t slot) {
  const auto it = std::lower_bound(s.fragmented.begin(), s.fragmented.end(), slot);
  const auto i = static_cast<std::size_t>(it - s.fragmented.begin());
  return {s.runs.data() + s.first[i], s.first[i + 1] - s.first[i]};
}

// Note [Bitmaps read window by window]
// The slots lie where their keys hashed, so the fragmented ones may be
// spread over the whole table: a kernel's first launch gets a table sized
// from its inferred footprint (every pointer to the end of its
// allocation), which may be thousands of times the pages it touches, and
// a gather over a large buffer fragments every page it touches. A copy per
// fragmented slot costs a copy's latency each; one copy from the first to
// the last would bring the whole table's bitmaps to the host at once (half
// a gigabyte for a table of 2^20 slots). So the bitmaps come window by
// window: one copy from the first fragmented slot of a window of
// `window_slots` slots to the last fragmented slot in it, decoded before
// the next window is read. At most capacity / window_slots + 1 copies and
// window_slots bitmaps in memory at once. A window of a few fragmented
// slots in a large sparse table was still mostly the bitmaps between them
// (cuSolverRf under --precise, H200: 11.7 MB read back a launch of about
// 41 pages), so a gap of more than bitmap_gap_slots slots also ends a
// copy: a copy then moves at most 64 KiB that no page needs.
// out.fragmented: the slots that need their bitmaps, ascending (found by
// scan_slots's one pass over the summaries).
// Stops once the runs exceed `max_runs` (Note [A footprint too fragmented
// to use] in footprint_decode.h): `d.too_fragmented`, and `out` half made.
void read_fragmented(const table_layout& layout, std::uint64_t base, const fetch_fn& fetch,
                     const read_summaries& slots, std::uint32_t window_slots,
                     std::size_t max_runs, decoded_footprint& d, decode_scratch& out) {
  out.first.clear();
  out.runs.clear();
  const std::uint32_t window = std::max(window_slots, 1u);
  std::vector<measured_interval>& one = out.one;
  for (std::size_t i = 0; i < out.fragmented.size();) {
    const std::uint32_t lo = out.fragmented[i];
    std::size_t j = i;
    while (j < out.fragmented.size() && out.fragmented[j] - lo < window &&
           (j == i || out.fragmented[j] - out.fragmented[j - 1] <= bitmap_gap_slots)) {
      ++j;
    }
    const std::size_t words = std::size_t{out.fragmented[j - 1] - lo + 1} * words_per_bitmap;
    out.bits.reserve(words * sizeof(std::uint32_t), out.pinning);
    const auto* const bits = static_cast<const std::uint32_t*>(out.bits.data());
    fetch_or_throw(fetch, out.bits.data(),
                   base + layout.bits_offset + std::size_t{lo} * words_per_bitmap * 4,
                   words * sizeof(std::uint32_t), "page bitmaps");
    d.bytes_read_back += words * sizeof(std::uint32_t);
    for (; i < j; ++i) {
      const std::uint32_t slot = out.fragmented[i];
      one.clear();  // a slot's runs apart: never merged with another page's
      page_intervals(slots[slot], bits + std::size_t{slot - lo} * words_per_bitmap, one);
      out.first.push_back(out.runs.size());
      out.runs.insert(out.runs.end(), one.begin(), one.end());
    }
    if (out.runs.size() > max_runs) {
      d.too_fragmented = true;
      d.complete = false;
      return;
    }
  }
  out.first.push_back(out.runs.size());
}

}  // namespace

bool page_intervals(const page_summary& summary, const std::uint32_t* bitmap,
                    std::vector<measured_interval>& out) {
  if (summary.key == 0 || summary.bytes == 0 || kind_of_key(summary.key) >= kind_count) {
    return false;
  }
  const auto kind = static_cast<footprint_kind>(kind_of_key(summary.key));
  const std::uint64_t base = page_of_key(summary.key) << page_shift;
  if (is_one_run(summary)) {
    append_merged(out, {base + page_bytes - summary.first, base + summary.end, kind});
    return false;
  }
  // Note [Runs found a word at a time]: a gather over a large buffer
  // fragments every page it touches, and a bit at a time cost 4,096 steps
  // a page whatever it held. A word at a time, a run's ends are found with
  // countr_zero/countr_one: steps per word and per run.
  std::uint32_t run_begin = 0;
  bool in_run = false;
  for (std::uint32_t w = 0; w < words_per_bitmap; ++w) {
    const std::uint32_t word = bitmap[w];
    const std::uint32_t word_base = w * bits_per_word;
    if (word == (in_run ? ~0u : 0u)) continue;  // the run, or the gap, goes on
    std::uint32_t bit = 0;
    while (bit < bits_per_word) {
      // Zeros come in from the top: a run never reaches past the word.
      const std::uint32_t rest = word >> bit;
      if (in_run) {
        bit += static_cast<std::uint32_t>(std::countr_one(rest));
        if (bit == bits_per_word) break;
        append_merged(out, {base + run_begin, base + word_base + bit, kind});
        in_run = false;
      } else {
        if (rest == 0) break;
        bit += std::countr_zero(rest);
        run_begin = word_base + bit;
        in_run = true;
      }
    }
  }
  if (in_run) append_merged(out, {base + run_begin, base + page_bytes, kind});
  return true;
}

void coalesce(std::vector<measured_interval>& intervals) {
  std::sort(intervals.begin(), intervals.end(), [](const auto& a, const auto& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.begin < b.begin;
  });
  std::size_t out = 0;
  for (std::size_t i = 0; i < intervals.size(); ++i) {
    // Sorted, so merged_into only ever extends the end.
    if (out == 0 || !merged_into(intervals[out - 1], intervals[i])) intervals[out++] = intervals[i];
  }
  intervals.resize(out);
}

decoded_footprint decode_footprint(const table_layout& layout, std::uint64_t base,
                                   const fetch_fn& fetch, std::uint32_t bitmap_window) {
  decode_scratch scratch;
  return decode_footprint(layout, base, fetch, scratch, bitmap_window);
}

decoded_footprint decode_footprint(const table_layout& layout, std::uint64_t base,
                                   const fetch_fn& fetch, decode_scratch& scratch,
                                   std::uint32_t bitmap_window, std::size_t max_runs) {
  decoded_footprint d = fetch_footprint(layout, base, fetch, scratch, bitmap_window, max_runs);
  finish_footprint(scratch, d);
  return d;
}

decoded_footprint fetch_footprint(const table_layout& layout, std::uint64_t base,
                                  const fetch_fn& fetch, decode_scratch& scratch,
                                  std::uint32_t bitmap_window, std::size_t max_runs) {
  decoded_footprint d;
  // The counters and every main slot's summary after them in one copy
  // (Note [The slot is the bucket]), into memory nobody clears first: a
  // large table's read-back is megabytes.
  const std::size_t head_bytes = layout.spill_pages_offset - layout.counters_offset;
  scratch.head.reserve(head_bytes, scratch.pinning);
  const auto* const head = static_cast<const std::uint8_t*>(scratch.head.data());
  fetch_or_throw(fetch, scratch.head.data(), base + layout.counters_offset, head_bytes,
                 "counters and page summaries");
  d.bytes_read_back = head_bytes;
  table_counters counters;
  std::memcpy(&counters, head, sizeof counters);
  d.complete = counters.overflow == 0;
  read_summaries slots;
  slots.main = {reinterpret_cast<const page_summary*>(head + layout.pages_offset -
                                                       layout.counters_offset),
                layout.capacity};
  // Note [The room to grow is read only when used]
  d.spilled = counters.spilled != 0 && layout.spill_capacity != 0;
  if (d.spilled) {
    const std::size_t spill_bytes = std::size_t{layout.spill_capacity} * sizeof(page_summary);
    scratch.spill.reserve(spill_bytes, scratch.pinning);
    fetch_or_throw(fetch, scratch.spill.data(), base + layout.spill_pages_offset, spill_bytes,
                   "spilled page summaries");
    d.bytes_read_back += spill_bytes;
    slots.spill = {static_cast<const page_summary*>(scratch.spill.data()),
                   layout.spill_capacity};
  }
  // Note [Slots decoded in page order], Note [What a page needs, beside its key]
  bool intact = true;
  scratch.keys.clear();
  scratch.words.clear();
  scratch.fragmented.clear();
  scan_slots(slots.main, 0, intact, scratch);
  scan_slots(slots.spill, layout.capacity, intact, scratch);
  if (!intact) d.complete = false;
  // Note [Bitmaps read window by window]
  read_fragmented(layout, base, fetch, slots, bitmap_window, max_runs, d, scratch);
  d.pages = static_cast<std::uint32_t>(scratch.keys.size());
  d.fragmented_pages = static_cast<std::uint32_t>(scratch.fragmented.size());
  return d;
}

void finish_footprint(decode_scratch& scratch, decoded_footprint& d) {
  // Not a measurement, and its runs were not all found.
  if (d.too_fragmented) return;
  // Note [Slots decoded in page order]
  sort_by_kind_and_page(scratch.keys, scratch.keys_sorting);
  const decode_scratch& used = scratch;
  for (const std::uint64_t key : used.keys) {
    const std::uint32_t word = used.words[key & index_mask];
    if ((word & page_untouched) != 0) continue;
    if ((word & page_fragmented) != 0) {
      for (const measured_interval& run : runs_of(used, word & index_mask)) {
        append_merged(d.intervals, run);
      }
      continue;
    }
    const std::uint64_t base = (key << 2 >> (2 + slot_bits)) << page_shift;
    const std::uint32_t offsets = (1u << offset_bits) - 1;
    append_merged(d.intervals, {base + (word & offsets), base + (word >> offset_bits & offsets),
                                static_cast<footprint_kind>(key >> 62)});
  }
  coalesce(d.intervals);  // a few intervals by now: one per run
}

}  // namespace streamsan::precise
