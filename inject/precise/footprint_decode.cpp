#include "inject/precise/footprint_decode.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

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

// Note [Slots decoded in page order]
// Slots are handed out in the order warps reached their pages, so a
// streaming kernel's tens of thousands of one-run pages came out of
// page_intervals unordered, and sorting those intervals was most of a
// large launch's decoding, which the memory-bound triad under --precise
// spends per launch on the program's thread (bench/precise/decode_bench:
// 7.7 to 8.1 ms for 49,152 pages on the 2-core host before, 5.0 to 5.3
// after). Instead the slots are sorted by one integer, kind,
// page and slot (a page takes 38 bits and a slot 24: Note [A bucket holds
// its slot]), and a page's runs that continue the previous page's extend
// its interval: what is left for coalesce() is one interval per run.
// A summary naming a page no bucket can hold was not written by the patch
// code: `intact` turns false and the slot is left out.
std::vector<std::uint64_t> slots_in_page_order(const std::vector<page_summary>& pages,
                                               bool& intact) {
  std::vector<std::uint64_t> keys;
  keys.reserve(pages.size());
  for (std::size_t slot = 0; slot < pages.size(); ++slot) {
    const page_summary& p = pages[slot];
    if (p.page > max_page) {
      intact = false;
      continue;
    }
    keys.push_back(std::uint64_t{p.kind & 3u} << 62 | p.page << slot_bits | slot);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

bool page_intervals(const page_summary& summary, const std::uint32_t* bitmap,
                    std::vector<measured_interval>& out) {
  if (summary.bytes == 0 || summary.kind >= kind_count) return false;
  const auto kind = static_cast<footprint_kind>(summary.kind);
  const std::uint64_t base = summary.page << page_shift;
  if (is_one_run(summary)) {
    append_merged(out, {base + page_bytes - summary.first, base + summary.end, kind});
    return false;
  }
  // Runs of set bits.
  std::uint32_t run_begin = 0;
  bool in_run = false;
  for (std::uint32_t byte = 0; byte <= page_bytes; ++byte) {
    const bool set = byte < page_bytes &&
                     ((bitmap[byte / bits_per_word] >> (byte % bits_per_word)) & 1u) != 0;
    if (set && !in_run) {
      run_begin = byte;
      in_run = true;
    } else if (!set && in_run) {
      append_merged(out, {base + run_begin, base + byte, kind});
      in_run = false;
    }
  }
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
                                   const fetch_fn& fetch, std::uint32_t expected_pages) {
  decoded_footprint d;
  // The counters and the first `expected_pages` summaries in one copy; a
  // second copy only when more pages were used.
  const std::uint32_t guess = std::min(expected_pages, layout.capacity);
  std::vector<std::uint8_t> head(sizeof(table_counters) + std::size_t{guess} * sizeof(page_summary));
  fetch_or_throw(fetch, head.data(), base + layout.counters_offset, head.size(),
                 "counters and page summaries");
  table_counters counters;
  std::memcpy(&counters, head.data(), sizeof counters);
  const std::uint32_t used = std::min(counters.used, layout.capacity);
  d.complete = counters.overflow == 0 && counters.used <= layout.capacity;
  d.pages = used;
  std::vector<page_summary> pages(used);
  const std::uint32_t have = std::min(used, guess);
  // A launch that touched nothing has no summaries (and pages.data() may
  // be null, which memcpy must not get even for no bytes).
  if (have > 0) {
    std::memcpy(pages.data(), head.data() + sizeof counters,
                std::size_t{have} * sizeof(page_summary));
  }
  fetch_or_throw(fetch, pages.data() + have,
                 base + layout.pages_offset + std::size_t{have} * sizeof(page_summary),
                 std::size_t{used - have} * sizeof(page_summary), "page summaries");
  d.bytes_read_back = head.size() + std::size_t{used - have} * sizeof(page_summary);

  bool any_fragmented = false;
  for (const auto& p : pages) {
    if (p.bytes != 0 && !is_one_run(p)) any_fragmented = true;
  }
  // One copy of every used slot's bitmap when any slot needs one.
  std::vector<std::uint32_t> bits;
  if (any_fragmented) {
    const std::size_t words = std::size_t{used} * words_per_bitmap;
    bits.resize(words);
    fetch_or_throw(fetch, bits.data(), base + layout.bits_offset, words * sizeof(std::uint32_t),
                   "page bitmaps");
    d.bytes_read_back += words * sizeof(std::uint32_t);
  }
  // Note [Slots decoded in page order]
  bool intact = true;
  for (const std::uint64_t key : slots_in_page_order(pages, intact)) {
    const std::uint32_t slot = static_cast<std::uint32_t>(key & slot_field_mask);
    const std::uint32_t* bitmap =
        bits.empty() ? nullptr : bits.data() + std::size_t{slot} * words_per_bitmap;
    d.fragmented_pages += page_intervals(pages[slot], bitmap, d.intervals) ? 1 : 0;
  }
  coalesce(d.intervals);  // a few intervals by now: one per run
  if (!intact) d.complete = false;
  return d;
}

}  // namespace streamsan::precise
