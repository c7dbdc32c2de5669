// Reads a launch's footprint table back from the device and turns it into
// byte intervals (Note [Footprints are coalesced on the device]).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "inject/precise/footprint_layout.h"

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
  std::uint32_t pages = 0;             // slots used (page and kind)
  std::uint32_t fragmented_pages = 0;  // slots whose bitmap had to be read
  std::uint64_t bytes_read_back = 0;   // device-to-host traffic
};

// Copies `size` bytes at device address `source` to `destination`; false on
// failure.
using fetch_fn = std::function<bool(void* destination, std::uint64_t source, std::size_t size)>;

// How many summaries the first copy of a read-back takes for a kernel whose
// table hint is `slots_hint` slots. The launch tracker's hint is twice the
// pages the kernel's last launch used, so half of it is those pages, and an
// eighth more leaves room for a kernel whose page count varies a little;
// more pages cost a second copy. Reading the whole hint read twice the
// summaries a steady kernel has (the triad: 2.4 MB a launch for 1.2 MB).
constexpr std::uint32_t summaries_to_read(std::uint32_t slots_hint) {
  return slots_hint / 2 + slots_hint / 16;
}

// Decodes the table whose allocation starts at device address `base`,
// reading the counters and `expected_pages` summaries in one copy (the pages
// the kernel used last time: usually one copy suffices). Throws
// std::runtime_error naming the part that could not be read.
decoded_footprint decode_footprint(const table_layout& layout, std::uint64_t base,
                                   const fetch_fn& fetch, std::uint32_t expected_pages = 16);

// The intervals of one slot (a page and a kind) from its summary, reading
// `bitmap` (words_per_bitmap words) only when the bytes are not one run.
// Appends to `out`, extending its last interval where one continues it
// with the same kind; returns whether the bitmap was needed.
bool page_intervals(const page_summary& summary, const std::uint32_t* bitmap,
                    std::vector<measured_interval>& out);

// Sorts and merges adjacent or overlapping intervals of the same kind.
void coalesce(std::vector<measured_interval>& intervals);

}  // namespace streamsan::precise
