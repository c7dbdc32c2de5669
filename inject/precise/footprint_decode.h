// Reads a launch's footprint table back from the device and turns it into
// byte intervals (Note [Footprints are coalesced on the device]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "inject/precise/footprint_layout.h"
#include "inject/precise/staging_buffer.h"

namespace streamsan::precise {

struct measured_interval {
  std::uint64_t begin = 0;  // device addresses
  std::uint64_t end = 0;
  footprint_kind kind = footprint_kind::read;

  friend bool operator==(const measured_interval&, const measured_interval&) = default;
};

struct decoded_footprint {
  // Sorted by kind, then address; adjacent and overlapping intervals of one
  // kind are merged.
  std::vector<measured_interval> intervals;
  // False when the table overflowed: some accesses are missing.
  bool complete = true;
  // True when the table could not be read back at all (complete is false).
  bool failed = false;
  // True when its pages held more runs than a launch's budget (Note [A
  // footprint too fragmented to use]; complete is false).
  bool too_fragmented = false;
  // True when a key took a slot of the table's spill region, whose
  // summaries were read too (Note [The room to grow is read only when
  // used] in footprint_layout.h).
  bool spilled = false;
  std::uint32_t pages = 0;             // slots used (page and kind)
  std::uint32_t fragmented_pages = 0;  // slots whose bitmap had to be read
  std::uint64_t bytes_read_back = 0;   // device-to-host traffic
};

// Copies `size` bytes at device address `source` to `destination`; false on
// failure.
using fetch_fn = std::function<bool(void* destination, std::uint64_t source, std::size_t size)>;

// Note [Decoding reuses its buffers]
// A large launch's read-back is megabytes (the triad's summaries: 3 MB a
// launch), and buffers that size come from fresh pages each time (glibc
// maps an allocation above its threshold and unmaps it when freed), whose
// first touches fault: decode_bench's 49,152 pages took 5.8 ms with the
// heap trimmed before each decode against 2.0 ms with its memory reused
// (2-core host, median of 3). So a reader that decodes launch after
// launch (the tracker, under its poll lock) keeps one scratch and hands it
// to every decode: the buffers keep their capacity.
// The buffers the copies land in are pinned through `pinning` when it is
// set (Note [Read-backs land in page-locked memory] in staging_buffer.h).
struct decode_scratch {
  host_pinning* pinning = nullptr;
  staging_buffer head;                      // the counters and main summaries
  staging_buffer spill;                     // the spill region's summaries
  std::vector<std::uint64_t> keys;          // scan_slots, then sorted
  std::vector<std::uint64_t> keys_sorting;  // the radix sort's second buffer
  std::vector<std::uint32_t> words;
  std::vector<std::uint32_t> fragmented;    // slots whose bitmaps are read
  staging_buffer bits;                      // one window of bitmaps
  std::vector<std::size_t> first;           // per fragmented slot: its runs
  std::vector<measured_interval> runs;
  std::vector<measured_interval> one;
};

// Bitmaps a read-back copies at most at once (16 MiB: Note [Bitmaps read
// window by window] in footprint_decode.cpp).
inline constexpr std::uint32_t bitmap_window_slots = 32768;
// A gap of more slots between two fragmented ones starts a new copy (Note
// [Bitmaps read window by window]): 64 KiB, about what a copy's latency
// would move.
inline constexpr std::uint32_t bitmap_gap_slots = 128;

// Note [A footprint too fragmented to use]
// A gather or a scatter over a large buffer leaves every page it touches
// in many runs. Each run is read back, found, kept and checked by the
// engine, at every measured launch: on the H200, cuda-samples'
// MonteCarloMultiGPU and segmentationTreeThrust ran past 80 s at exit
// doing that (native: 0.4 and 1.1 s; docs/injection.md, the extra corpus).
// A launch whose pages hold more than `max_runs` runs is therefore not a
// measurement: decoding stops there, no more bitmaps are read, and the
// launch keeps its inferred footprint, as an overflowed one does (its
// conflicts are possible races, never reports), without the larger table
// an overflow gets. 2^20 runs is 24 MiB of intervals.
inline constexpr std::size_t max_runs_per_launch = std::size_t{1} << 20;

// Decodes the table whose allocation starts at device address `base`:
// one copy of the counters and every main slot's summary, one of the spill
// region's summaries when a key took one of its slots, and the bitmaps of
// the slots whose bytes are not one run, a copy per window of
// `bitmap_window` slots that holds any. Throws std::runtime_error naming
// the part that could not be read.
decoded_footprint decode_footprint(const table_layout& layout, std::uint64_t base,
                                   const fetch_fn& fetch,
                                   std::uint32_t bitmap_window = bitmap_window_slots);
// The same, with buffers kept from the decodes before (Note [Decoding
// reuses its buffers]): fetch_footprint, then finish_footprint.
decoded_footprint decode_footprint(const table_layout& layout, std::uint64_t base,
                                   const fetch_fn& fetch, decode_scratch& scratch,
                                   std::uint32_t bitmap_window = bitmap_window_slots,
                                   std::size_t max_runs = max_runs_per_launch);

// A decode in two halves (Note [Decoded on a thread of its own] in
// inject/sanitizer_api/launch_tracker.cpp). fetch_footprint makes every
// copy (the summaries, the fragmented slots' bitmaps) and fills `scratch`
// and every field of the result but its intervals; finish_footprint then
// needs only `scratch`, no copy: it sorts the pages and makes the
// intervals.
decoded_footprint fetch_footprint(const table_layout& layout, std::uint64_t base,
                                  const fetch_fn& fetch, decode_scratch& scratch,
                                  std::uint32_t bitmap_window = bitmap_window_slots,
                                  std::size_t max_runs = max_runs_per_launch);
void finish_footprint(decode_scratch& scratch, decoded_footprint& d);

// The intervals of one slot (a page and a kind) from its summary, reading
// `bitmap` (words_per_bitmap words) only when the bytes are not one run.
// Appends to `out`, extending its last interval where one continues it
// with the same kind; returns whether the bitmap was needed.
bool page_intervals(const page_summary& summary, const std::uint32_t* bitmap,
                    std::vector<measured_interval>& out);

// Sorts and merges adjacent or overlapping intervals of the same kind.
void coalesce(std::vector<measured_interval>& intervals);

}  // namespace streamsan::precise
