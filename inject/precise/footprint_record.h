// How one lane folds an interval of one page into a footprint table (Note
// [Footprints are coalesced on the device] in footprint_layout.h). Compiled
// for the GPU by the patch code and for the host by the unit tests, which
// drive it from many threads: the atomics below map to CUDA's on the device
// and to the compiler's __atomic builtins on the host.
#pragma once

#include <cstdint>

#include "inject/precise/footprint_layout.h"

#if defined(__CUDACC__)
#define STREAMSAN_HD __host__ __device__ __forceinline__
#else
#define STREAMSAN_HD inline
#endif

namespace streamsan::precise {
namespace lane {

// Note [Relaxed loads at device scope]
// The table's words are read while other lanes change them. A volatile
// load compiles to a strong load at system scope (LD.E.STRONG.SYS), more
// than a table in device memory that only this GPU's kernels touch needs:
// these are relaxed loads and stores at device scope, ordered by the
// atomics around them.
STREAMSAN_HD std::uint32_t load(const std::uint32_t* p) {
#if defined(__CUDA_ARCH__)
  std::uint32_t v;
  asm volatile("ld.relaxed.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}
STREAMSAN_HD std::uint64_t load(const std::uint64_t* p) {
#if defined(__CUDA_ARCH__)
  std::uint64_t v;
  asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
#else
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
#endif
}
// Publishes a bucket's slot. Nothing needs ordering before it: the host
// cleared the slot before the launch (Note [Pages inserted without
// waiting]).
STREAMSAN_HD void publish(std::uint64_t* p, std::uint64_t v) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.relaxed.gpu.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
#else
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
#endif
}
STREAMSAN_HD std::uint64_t cas(std::uint64_t* p, std::uint64_t expected, std::uint64_t desired) {
#if defined(__CUDA_ARCH__)
  return atomicCAS(reinterpret_cast<unsigned long long*>(p), expected, desired);
#else
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return expected;
#endif
}
STREAMSAN_HD std::uint32_t fetch_add(std::uint32_t* p, std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  return atomicAdd(p, v);
#else
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
#endif
}
STREAMSAN_HD std::uint32_t fetch_or(std::uint32_t* p, std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  return atomicOr(p, v);
#else
  return __atomic_fetch_or(p, v, __ATOMIC_ACQ_REL);
#endif
}
STREAMSAN_HD void max(std::uint32_t* p, std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  atomicMax(p, v);
#else
  std::uint32_t seen = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (seen < v && !__atomic_compare_exchange_n(p, &seen, v, true, __ATOMIC_ACQ_REL,
                                                  __ATOMIC_RELAXED)) {
  }
#endif
}
STREAMSAN_HD std::uint32_t popcount(std::uint32_t v) {
#if defined(__CUDA_ARCH__)
  return __popc(v);
#else
  return static_cast<std::uint32_t>(__builtin_popcount(v));
#endif
}
}  // namespace lane

inline constexpr std::uint32_t slot_overflowed = 0xffffffffu;

// Note [No word every access reads]
// Every warp of a kernel records its accesses at about the same moments
// (they run the same loop), so a word that every recording reads is read by
// thousands of warps at once, all from one L2 slice, and the accesses queue
// there: a record's cost then grows with the number of warps in flight,
// not with its own work. The overflow counter was such a word: each record
// read it before its bucket. Now a hit reads only the page's bucket, which
// the warps of other pages do not share, and the counters are read on a
// miss (a new page, or a probe past the first bucket).

// A multiplicative hash of the page number (Fibonacci hashing): consecutive
// pages land in different buckets.
STREAMSAN_HD std::uint32_t page_hash(std::uint64_t page) {
  return static_cast<std::uint32_t>((page * 0x9e3779b97f4a7c15ull) >> 32);
}

// Note [Pages inserted without waiting]
// The first lane to record a page takes its bucket (pending), a slot and
// publishes the slot in the bucket; lanes of other warps that record the
// same page meanwhile wait for the publication. Every warp of a streaming
// kernel reaches new pages at about the same moment, so how long a page
// stays pending is paid by the whole kernel (on the H200 pipeline, lanes
// waiting for pages cost 3 ms of 61, those inserting them 2.3 ms:
// docs/injection.md). So the host clears the whole table before the
// launch, a memset on the launch's stream (bits and summaries included:
// O(capacity), on the GPU), and the inserting lane neither clears its slot
// nor fences before publishing: the window is the bucket's CAS and the
// counter's add. The slot's summary names its page and kind after the
// publication; only the host reads them, once the kernel has run.
STREAMSAN_HD void name_slot(const table_view& t, std::uint32_t slot, std::uint64_t page,
                            footprint_kind kind) {
  page_summary& s = t.pages[slot];
  s.page = page;
  s.kind = static_cast<std::uint32_t>(kind);
}

// The slot a bucket's field names, or slot_overflowed.
STREAMSAN_HD std::uint32_t slot_in(std::uint64_t bucket) {
  const std::uint64_t field = bucket & slot_field_mask;
  return field == slot_field_overflowed ? slot_overflowed : static_cast<std::uint32_t>(field - 1);
}

// The slot of `key` (of `page` and `kind`), inserting it if needed;
// slot_overflowed when the table is full. Probing starts at bucket `b`,
// whose word the caller already read as `seen`. The lane that inserts a key
// takes its bucket with the field pending, takes a slot and publishes it
// (Note [Pages inserted without waiting]); a lane that finds the key still
// pending waits for it (independent thread scheduling lets the publishing
// lane progress even in the same warp). Once a full table's overflow is
// counted it takes no new key (slot_to_record reads the counter first), so
// probing ends at an empty bucket or, after lanes raced past a full table,
// after every bucket.
STREAMSAN_HD std::uint32_t find_or_insert_from(const table_view& t, std::uint64_t page,
                                               footprint_kind kind, std::uint64_t key,
                                               std::uint32_t b, std::uint64_t seen) {
  const std::uint64_t pending = key << slot_bits | slot_field_pending;
  for (std::uint32_t probe = 0; probe <= t.bucket_mask; ++probe) {
    if (seen == 0) {
      seen = lane::cas(&t.buckets[b], 0, pending);
      if (seen == 0) {
        const std::uint32_t slot = lane::fetch_add(&t.counters->used, 1);
        if (slot >= t.capacity) {
          lane::publish(&t.buckets[b], key << slot_bits | slot_field_overflowed);
          return slot_overflowed;
        }
        lane::publish(&t.buckets[b], key << slot_bits | (std::uint64_t{slot} + 1));
        name_slot(t, slot, page, kind);
        return slot;
      }
    }
    if (seen >> slot_bits == key) {
      // A spin on the bucket's word: __nanosleep(32) between loads slept
      // longer than the publication takes (Note [Pages inserted without
      // waiting]).
      while (seen == pending) seen = lane::load(&t.buckets[b]);
      return slot_in(seen);
    }
    b = (b + 1) & t.bucket_mask;
    seen = lane::load(&t.buckets[b]);
  }
  return slot_overflowed;
}

STREAMSAN_HD std::uint64_t key_of(std::uint64_t page, footprint_kind kind) {
  return ((page << 2) | static_cast<std::uint32_t>(kind)) + 1;
}

// The slot a lane records (`page`, `kind`) into, or slot_overflowed. A hit
// is one load of the page's first bucket (Note [A bucket holds its slot]
// in footprint_layout.h) and nothing else (Note [No word every access
// reads]). Only a miss reads the overflow counter: an overflowed launch is
// not a measurement any more, so its accesses to pages it has no slot for
// stop there instead of probing a full table. A page whose key does not fit
// a bucket never hits (its key is above every bucket's) and counts as an
// overflow.
STREAMSAN_HD std::uint32_t slot_to_record(const table_view& t, std::uint64_t page,
                                          footprint_kind kind) {
  const std::uint64_t key = key_of(page, kind);
  const std::uint32_t b = page_hash(key) & t.bucket_mask;
  const std::uint64_t seen = lane::load(&t.buckets[b]);
  if (seen >> slot_bits == key && (seen & slot_field_mask) != slot_field_pending) {
    return slot_in(seen);
  }
  if (lane::load(&t.counters->overflow) != 0) return slot_overflowed;
  // Compared as keys, so the page need not stay live: comparing pages
  // spilled 24 bytes more per call on sm_90 (ptxas -v).
  const std::uint64_t largest_key = key_of(max_page, footprint_kind::atomic);
  const std::uint32_t slot =
      key > largest_key ? slot_overflowed : find_or_insert_from(t, page, kind, key, b, seen);
  if (slot == slot_overflowed) lane::fetch_add(&t.counters->overflow, 1);
  return slot;
}

// The bits [lo, hi) of one 32-bit word, 0 <= lo < hi <= 32.
STREAMSAN_HD std::uint32_t word_mask(std::uint32_t lo, std::uint32_t hi) {
  const std::uint32_t upto_hi = hi >= 32 ? 0xffffffffu : ((1u << hi) - 1u);
  return upto_hi & ~((1u << lo) - 1u);
}

// Sets the bits of bytes [begin, end) (offsets within the page) that lie in
// bitmap word `w` of `slot` (w * bits_per_word < end); returns how many of
// them were not set yet. Re-reading bytes already recorded costs a load,
// not an atomic.
STREAMSAN_HD std::uint32_t record_word(const table_view& t, std::uint32_t slot, std::uint32_t w,
                                       std::uint32_t begin, std::uint32_t end) {
  std::uint32_t* word = t.bits + std::uint64_t{slot} * words_per_bitmap + w;
  const std::uint32_t at = w * bits_per_word;
  const std::uint32_t lo = begin > at ? begin - at : 0;
  const std::uint32_t hi = end - at < bits_per_word ? end - at : bits_per_word;
  const std::uint32_t mask = word_mask(lo, hi);
  if ((lane::load(word) & mask) == mask) return 0;
  const std::uint32_t before = lane::fetch_or(word, mask);
  return lane::popcount(mask & ~before);
}

// One of `lanes` lanes' share of recording bytes [begin, end) (offsets
// within the page) into `slot`'s bitmap: the words rank, rank + lanes, ...
// of the span. Returns how many of its bytes were not set yet.
STREAMSAN_HD std::uint32_t set_share(const table_view& t, std::uint32_t slot, std::uint32_t begin,
                                     std::uint32_t end, std::uint32_t rank, std::uint32_t lanes) {
  std::uint32_t added = 0;
  for (std::uint32_t w = begin / bits_per_word + rank; w * bits_per_word < end; w += lanes) {
    added += record_word(t, slot, w, begin, end);
  }
  return added;
}

// Adds a lane's newly set bytes to the slot's summary and, when `extent`,
// the span's bounds to its maxima (the same from every lane of a span, so
// one lane that set new bytes suffices).
STREAMSAN_HD void add_to_summary(const table_view& t, std::uint32_t slot, std::uint32_t begin,
                                 std::uint32_t end, std::uint32_t added, bool extent) {
  page_summary& s = t.pages[slot];
  if (added != 0) lane::fetch_add(&s.bytes, added);
  if (!extent) return;
  lane::max(&s.first, page_bytes - begin);
  lane::max(&s.end, end);
}

// A lane's whole part of recording a span (rank 0 of 1: the whole span),
// each lane that set new bytes adding the span's bounds too.
STREAMSAN_HD void record_share(const table_view& t, std::uint32_t slot, std::uint32_t begin,
                               std::uint32_t end, std::uint32_t rank, std::uint32_t lanes) {
  const std::uint32_t added = set_share(t, slot, begin, end, rank, lanes);
  add_to_summary(t, slot, begin, end, added, added != 0);
}

// Folds bytes [begin, end) of `page` (offsets within the page,
// begin < end <= page_bytes) into the table as `kind`.
STREAMSAN_HD void record_interval(const table_view& t, std::uint64_t page, std::uint32_t begin,
                                  std::uint32_t end, footprint_kind kind) {
  const std::uint32_t slot = slot_to_record(t, page, kind);
  if (slot != slot_overflowed) record_share(t, slot, begin, end, 0, 1);
}

// Folds [address, address + size) into the table, page by page (bulk copies
// may span several pages; a plain access never does, being aligned).
STREAMSAN_HD void record_span(const table_view& t, std::uint64_t address, std::uint64_t size,
                              footprint_kind kind) {
  while (size > 0) {
    const std::uint64_t page = address >> page_shift;
    const std::uint32_t begin = static_cast<std::uint32_t>(address & (page_bytes - 1));
    const std::uint64_t room = page_bytes - begin;
    const std::uint32_t len = static_cast<std::uint32_t>(size < room ? size : room);
    record_interval(t, page, begin, begin + len, kind);
    address += len;
    size -= len;
  }
}

// Note [A whole warp's coalesced access]
// Most accesses of streaming kernels are one instruction of a full warp
// whose lanes read or write consecutive elements: lane i at first + i *
// size, all in one page. Recognizing that takes one shuffle of the first
// lane's address and shape and one vote, where forming groups in general
// takes two match instructions, a ballot and a butterfly of 20 shuffles
// (each collective of a tools patch also pays a convergence block around
// it). The general path would find the same: one group, dense, spanning
// [first, first + 32 * size). `shape` is size << 2 | kind, so lanes that
// reached the patch from different instructions never pass as one access.
STREAMSAN_HD bool lane_continues_coalesced(std::uint64_t first, std::uint32_t first_shape,
                                           std::uint64_t address, std::uint32_t shape,
                                           std::uint32_t lane) {
  const std::uint32_t size = shape >> 2;
  const std::uint64_t last = first + std::uint64_t{32} * size - 1;
  return shape == first_shape && size != 0 && address == first + std::uint64_t{lane} * size &&
         (first >> page_shift) == (last >> page_shift);
}

// Whether the accesses of a group of lanes (same page, same kind) cover
// exactly [span_begin, span_end): every lane accesses `size` bytes at an
// offset that is a multiple of `size` from span_begin, and the distinct
// addresses fill the span. Then one lane records the whole span.
STREAMSAN_HD bool group_is_dense(std::uint32_t span_begin, std::uint32_t span_end,
                                 std::uint32_t distinct_addresses, bool uniform_size,
                                 bool all_aligned, std::uint32_t size) {
  return uniform_size && all_aligned &&
         std::uint64_t{span_end - span_begin} == std::uint64_t{distinct_addresses} * size;
}

}  // namespace streamsan::precise
