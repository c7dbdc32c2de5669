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
// the page summaries (48 bytes a page) and fetches a page's bitmap only when
// its bytes are not one contiguous run: bringing a launch's footprint back
// costs O(pages touched + fragmented pages), not O(accesses).
//
// Slots are found through an open-addressing hash table keyed by page and
// kind, and handed out in insertion order, so the host reads the first
// `used` summaries. A bucket holds its key and its slot in one word (Note
// [A bucket holds its slot]). A full table takes no new key: an access that
// finds neither its key nor room stops at the first empty bucket (at least
// half the buckets stay empty) and counts itself in `overflow`; later
// accesses of the launch to pages without a slot stop at the counter, and
// those to pages with one still record (Note [No word every access reads]
// in footprint_record.h). Such a launch's footprint is
// incomplete and is not used as a measurement: the launch keeps its inferred
// footprint and the kernel's next launch gets a larger table, up to
// max_capacity slots.
//
// Note [A bucket holds its slot]
// A bucket is `key << slot_bits | field`: field 0 while the inserting lane
// takes a slot, slot + 1 once published, all ones when the table had no
// room. With the slot in an array beside the keys, a hit was two dependent
// loads (the key, then its slot) before the bitmap; now it is one, and the
// table has one array fewer to clear. (On the H200 pipeline this changed
// nothing measurable: docs/injection.md, "What `--precise` pays for".) A
// key takes 64 - slot_bits = 40 bits: pages below 2^38, addresses below
// 2^50, above the 49-bit virtual addresses of today's GPUs. An access
// above that counts as an overflow (the launch falls back to its inferred
// footprint), never as another page. The field also bounds a table: at
// most max_capacity = 2^23 slots (32 GiB of pages of one kind, 4.5 GB of
// table), so a kernel's tables stop growing there. Twenty bits of slot
// would have capped a kernel's measured footprint at 2 GiB, which one GEMM
// over a large weight exceeds.
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

// A bucket's word (Note [A bucket holds its slot]).
inline constexpr std::uint32_t slot_bits = 24;
inline constexpr std::uint64_t slot_field_mask = (std::uint64_t{1} << slot_bits) - 1;
inline constexpr std::uint64_t slot_field_pending = 0;
inline constexpr std::uint64_t slot_field_overflowed = slot_field_mask;
// The highest page whose key, (page << 2 | kind) + 1, fits above the field.
inline constexpr std::uint64_t max_page = (std::uint64_t{1} << (62 - slot_bits)) - 1;
// Slots of the largest table: a power of two below the fields' slot + 1.
inline constexpr std::uint32_t max_capacity = std::uint32_t{1} << (slot_bits - 1);

// One slot's summary. Zero is "nothing touched", so that it can be updated
// with atomic maxima alone: `first` holds page_bytes minus the lowest offset
// touched (maximized), `end` one past the highest (maximized).
struct page_summary {
  std::uint64_t page = 0;  // address >> page_shift
  std::uint32_t kind = 0;  // a footprint_kind
  std::uint32_t first = 0;
  std::uint32_t end = 0;
  std::uint32_t bytes = 0;
};
static_assert(sizeof(page_summary) == 24);

// The counters of one launch.
struct table_counters {
  std::uint32_t used = 0;      // slots handed out (may exceed capacity: then overflow)
  std::uint32_t overflow = 0;  // accesses that found no slot
  std::uint64_t reserved = 0;
};
static_assert(sizeof(table_counters) == 16);

// Bytes of device memory a table of `capacity` slots takes.
constexpr std::size_t slot_bytes = sizeof(page_summary) + words_per_bitmap * 4;

// The device pointers and sizes of one table; the table_view lives in device
// memory at the start of the table's allocation and is passed to the patch
// code as its userdata.
struct table_view {
  std::uint32_t capacity = 0;     // page slots
  std::uint32_t bucket_mask = 0;  // hash buckets - 1 (a power of two >= 2 * capacity)
  table_counters* counters = nullptr;
  // [buckets] key << slot_bits | field, key = (page << 2 | kind) + 1;
  // 0 = empty (Note [A bucket holds its slot]).
  std::uint64_t* buckets = nullptr;
  page_summary* pages = nullptr;     // [capacity]
  std::uint32_t* bits = nullptr;     // [capacity][words_per_bitmap]
};

// Where each part lies in one allocation:
//   view | buckets | counters | pages | bits
// Before a launch the host clears [cleared_offset, cleared_end): the whole
// table but its view (Note [Pages inserted without waiting] in
// footprint_record.h). After the launch the host reads
// [counters_offset, counters_offset + 16 + used * 24) in one copy: the
// counters and the summaries are adjacent.
struct table_layout {
  std::uint32_t capacity = 0;
  std::uint32_t buckets = 0;
  std::size_t view_offset = 0;
  std::size_t buckets_offset = 0;
  std::size_t counters_offset = 0;
  std::size_t pages_offset = 0;
  std::size_t bits_offset = 0;
  std::size_t bytes = 0;
  std::size_t cleared_offset = 0;
  std::size_t cleared_end = 0;
};

constexpr std::size_t align_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

// At most max_capacity slots (Note [A bucket holds its slot]).
constexpr table_layout layout_for(std::uint32_t capacity) {
  table_layout l;
  if (capacity > max_capacity) capacity = max_capacity;
  l.capacity = capacity;
  std::uint32_t buckets = 1;
  while (buckets < 2 * capacity) buckets *= 2;
  l.buckets = buckets;
  l.view_offset = 0;
  l.buckets_offset = align_up(sizeof(table_view), 256);
  l.counters_offset =
      align_up(l.buckets_offset + std::size_t{buckets} * sizeof(std::uint64_t), 16);
  l.pages_offset = l.counters_offset + sizeof(table_counters);
  l.bits_offset = align_up(l.pages_offset + std::size_t{capacity} * sizeof(page_summary), 16);
  l.bytes = l.bits_offset + std::size_t{capacity} * words_per_bitmap * sizeof(std::uint32_t);
  l.cleared_offset = l.buckets_offset;
  l.cleared_end = l.bytes;
  return l;
}

// The view of a table whose allocation starts at `base` (a device address).
inline table_view view_at(std::uintptr_t base, const table_layout& l) {
  table_view v;
  v.capacity = l.capacity;
  v.bucket_mask = l.buckets - 1;
  v.counters = reinterpret_cast<table_counters*>(base + l.counters_offset);
  v.buckets = reinterpret_cast<std::uint64_t*>(base + l.buckets_offset);
  v.pages = reinterpret_cast<page_summary*>(base + l.pages_offset);
  v.bits = reinterpret_cast<std::uint32_t*>(base + l.bits_offset);
  return v;
}

}  // namespace streamsan::precise
