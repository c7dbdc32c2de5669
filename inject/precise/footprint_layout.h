// The device-side footprint table of one instrumented kernel launch, shared
// by the patch code that fills it (footprint_patches.cu, on the GPU) and the
// host code that reads it back (footprint_decode.cpp).
//
// Note [Footprints are coalesced on the device]
// A kernel may make billions of global-memory accesses; bringing each back
// (as NVIDIA's MemoryTracker sample does) costs O(accesses). Instead the
// patch code folds every access into a per-launch table with one slot per
// 4 KiB page and access kind (read, write, atomic) touched: a bitmap of the
// bytes touched, the lowest and highest byte touched and the number of bytes
// set (a slot costs 536 bytes: a footprint of N bytes needs N/8 of table per
// kind it is accessed with).
// A warp first merges its lanes' accesses (a coalesced warp access becomes
// one interval), and a lane only issues atomics when it sets bits that were
// not set yet, so re-reading the same data costs plain loads. The host reads
// the slots' summaries (24 bytes a slot) and fetches a page's bitmap only
// when its bytes are not one contiguous run: bringing a launch's footprint
// back costs O(slots + fragmented pages), not O(accesses).
//
// Slots are the buckets of an open-addressing hash table keyed by page and
// kind (Note [The slot is the bucket]). An access whose key finds neither
// its bucket nor an empty one within max_probes buckets sets `overflow`
// (once: later ones see it set and add nothing); later accesses of the
// launch still take the free slots they find and record into the slots
// they have (Note [Pages inserted without asking] in footprint_record.h).
// Such a launch's footprint is incomplete and is not used as a
// measurement: the launch keeps its inferred footprint and the kernel's
// next launch gets a larger table, up to max_capacity slots.
//
// Note [The slot is the bucket]
// A slot's summary starts with its key, (page << 2 | kind) + 1, 0 while
// the slot is free; the key's hash picks the first bucket and probing is
// linear. So inserting a page is one compare-and-swap of that word from 0
// to the key, and a lane that loses the race to a lane inserting the same
// key finds its slot in the CAS's answer. Before, slots were handed out in
// insertion order from a counter and named in a separate bucket array: an
// insertion was a CAS that marked the bucket pending, an add on the
// counter that every inserting lane of the launch shared, and a store
// publishing the slot, and every lane of other warps that reached the page
// meanwhile spun on the pending bucket. On the H200 pipeline (`64 25000`)
// inserting pages cost 2.3 ms of 61 and waiting for them 3 ms
// (docs/injection.md, "The recording priced step by step"). The price:
// the bitmaps are per bucket, and the tracker keeps buckets at most half
// used (its hint is twice the pages of the kernel's last launch), so a
// table takes up to twice the bitmap memory for the same pages; and the
// host reads every bucket's summary back (24 bytes each) instead of the
// used ones. A key takes 64 bits; the page stays below 2^38 (addresses
// below 2^50, above the 49-bit virtual addresses of today's GPUs) because
// decoding sorts slots by kind, page and bucket packed in one integer
// (Note [Slots decoded in page order]). An access above that counts as an
// overflow (the launch falls back to its inferred footprint), never as
// another page. A table has at most max_capacity = 2^23 buckets (4.5 GB),
// so a kernel's tables stop growing there; a launch whose pages crowd
// its buckets until probing gives up overflows instead.
//
// Note [The room to grow is read only when used]
// A kernel's table is sized from its largest measured launch (twice its
// pages, Note [Tables sized from measured launches] in launch_tracker.cpp),
// with room for a later launch to grow: up to 16 times that. The host reads
// every bucket's summary back, so that room was most of each launch's
// read-back: cuSolverRf under --precise read back 41 GB for 54,916 launches
// of about 40 pages each, 744 KB a launch, and the copies took 2.6 s of
// its 7.3 (H200, 2026-11-30). So the room is a region of its own, the
// spill region, after the main one: a key probes the main region first
// (at most main_probes buckets while a spill region exists), and only a
// key that finds neither its slot nor a free one there goes on to probe
// the spill region, whose hash and probing are the main region's over its
// own slots. A key is never removed, so every lane looking for one key
// sees the same full buckets and goes on to the same region. The first
// key to take a spill slot sets the counters' `spilled`, and the host reads
// the spill region's summaries only then: a launch that fits its kernel's
// largest one reads back the counters and the main region's summaries in
// one copy. A spilled launch is still a measurement (the next table's
// main region is sized from it); a launch that fills both regions
// overflows, as before. The price is paid by launches that outgrow the main
// region: their spilled pages probe main_probes buckets first at every
// access, and the table's memory is the spill region's plus the main one's.
#pragma once

#include <cstddef>
#include <cstdint>

namespace streamsan::precise {

inline constexpr std::uint32_t page_shift = 12;
inline constexpr std::uint32_t page_bytes = 1u << page_shift;
inline constexpr std::uint32_t bits_per_word = 32;
inline constexpr std::uint32_t words_per_bitmap = page_bytes / bits_per_word;  // 128

// What an access did to its bytes. Two atomics never race with each other;
// an atomic and a plain access do (Note [Atomics are their own access kind]
// in sanitizer/log/record.h).
enum class footprint_kind : std::uint32_t { read = 0, write = 1, atomic = 2 };
inline constexpr std::uint32_t kind_count = 3;

// Pages whose key, (page << 2 | kind) + 1, decoding can pack with a slot
// (Note [Slots decoded in page order] in footprint_decode.cpp).
inline constexpr std::uint32_t slot_bits = 24;
inline constexpr std::uint64_t max_page = (std::uint64_t{1} << (62 - slot_bits)) - 1;
// Slots of the largest table (Note [The slot is the bucket]).
inline constexpr std::uint32_t max_capacity = std::uint32_t{1} << (slot_bits - 1);
// Buckets an insertion probes before its launch counts an overflow. The
// tracker keeps tables at most half full, where linear probing takes 2.5
// buckets on average to find an empty one; 64 lets a table that a launch
// outgrew fill to about nine tenths before it overflows.
inline constexpr std::uint32_t max_probes = 64;
// Buckets of the main region a key probes before it goes on to the spill
// region, when there is one (Note [The room to grow is read only when
// used]). The main region is at most half full while its kernel's launches
// keep their size, where a key rarely probes more than a few; every access
// to a spilled page pays this many loads first.
inline constexpr std::uint32_t main_probes = 16;

// A slot's key is 0 for a free slot, else (page << 2 | kind) + 1 (key_of in
// footprint_record.h, which the device compiles).
constexpr std::uint64_t page_of_key(std::uint64_t key) { return (key - 1) >> 2; }
constexpr std::uint32_t kind_of_key(std::uint64_t key) {
  return static_cast<std::uint32_t>((key - 1) & 3);
}

// One slot's summary. Besides the key, zero is "nothing touched", so that
// it can be updated with atomic maxima alone: `first` holds page_bytes
// minus the lowest offset touched (maximized), `end` one past the highest
// (maximized).
struct page_summary {
  std::uint64_t key = 0;  // key_of(page, kind); 0: a free slot
  std::uint32_t first = 0;
  std::uint32_t end = 0;
  std::uint32_t bytes = 0;
  std::uint32_t reserved = 0;
};
static_assert(sizeof(page_summary) == 24);

// The counters of one launch.
struct table_counters {
  std::uint32_t overflow = 0;  // accesses that found no slot
  // Not 0 once a key took a slot of the spill region (Note [The room to
  // grow is read only when used]).
  std::uint32_t spilled = 0;
  std::uint64_t reserved = 0;
};
static_assert(sizeof(table_counters) == 16);

// Bytes of device memory a slot takes.
constexpr std::size_t slot_bytes = sizeof(page_summary) + words_per_bitmap * 4;

// The device pointers and sizes of one table; the table_view lives in device
// memory at the start of the table's allocation and is passed to the patch
// code as its userdata.
struct table_view {
  std::uint32_t capacity = 0;   // slots, a power of two (Note [The slot is the bucket])
  std::uint32_t slot_mask = 0;  // capacity - 1
  // The spill region's slots (0 or a power of two), after the main ones
  // (Note [The room to grow is read only when used]).
  std::uint32_t spill_capacity = 0;
  std::uint32_t spill_mask = 0;  // spill_capacity - 1
  table_counters* counters = nullptr;
  page_summary* pages = nullptr;  // [capacity + spill_capacity]
  std::uint32_t* bits = nullptr;  // [capacity + spill_capacity][words_per_bitmap]
};

// Where each part lies in one allocation:
//   view | counters | pages (main, then spill) | bits (main, then spill)
// Before a launch the host clears [cleared_offset, cleared_end): the whole
// table but its view (Note [Pages inserted without waiting] in
// footprint_record.h). After the launch the host reads
// [counters_offset, spill_pages_offset) in one copy: the counters and the
// main region's summaries after them; the spill region's summaries only
// when the counters say a key took one of its slots.
struct table_layout {
  std::uint32_t capacity = 0;        // main slots
  std::uint32_t spill_capacity = 0;  // spill slots: 0 or a power of two
  std::size_t view_offset = 0;
  std::size_t counters_offset = 0;
  std::size_t pages_offset = 0;
  std::size_t spill_pages_offset = 0;
  std::size_t bits_offset = 0;
  std::size_t bytes = 0;
  std::size_t cleared_offset = 0;
  std::size_t cleared_end = 0;

  constexpr std::uint32_t slots() const { return capacity + spill_capacity; }
};

constexpr std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

// The smallest power of two of at least `n` slots, at most max_capacity.
constexpr std::uint32_t region_slots(std::uint32_t n) {
  if (n > max_capacity) n = max_capacity;
  std::uint32_t slots = 1;
  while (slots < n) slots *= 2;
  return slots;
}

// A table of at least `capacity` main slots and, when `spill_capacity` is
// not 0, at least that many spill slots (each a power of two, at most
// max_capacity).
constexpr table_layout layout_for(std::uint32_t capacity, std::uint32_t spill_capacity = 0) {
  table_layout l;
  l.capacity = region_slots(capacity);
  l.spill_capacity = spill_capacity == 0 ? 0 : region_slots(spill_capacity);
  const std::size_t slots = l.slots();
  l.view_offset = 0;
  l.counters_offset = align_up(sizeof(table_view), 256);
  l.pages_offset = l.counters_offset + sizeof(table_counters);
  l.spill_pages_offset = l.pages_offset + std::size_t{l.capacity} * sizeof(page_summary);
  l.bits_offset = align_up(l.pages_offset + slots * sizeof(page_summary), 16);
  l.bytes = l.bits_offset + slots * words_per_bitmap * sizeof(std::uint32_t);
  l.cleared_offset = l.counters_offset;
  l.cleared_end = l.bytes;
  return l;
}

// The view of a table whose allocation starts at `base` (a device address).
inline table_view view_at(std::uintptr_t base, const table_layout& l) {
  table_view v;
  v.capacity = l.capacity;
  v.slot_mask = l.capacity - 1;
  v.spill_capacity = l.spill_capacity;
  v.spill_mask = l.spill_capacity == 0 ? 0 : l.spill_capacity - 1;
  v.counters = reinterpret_cast<table_counters*>(base + l.counters_offset);
  v.pages = reinterpret_cast<page_summary*>(base + l.pages_offset);
  v.bits = reinterpret_cast<std::uint32_t*>(base + l.bits_offset);
  return v;
}

}  // namespace streamsan::precise
