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
// read it before its bucket. Now a hit reads only its page's slots, which
// the warps of other pages do not share, and the counter is read only once
// a page has found neither its key nor a free slot.
//
// Note [Pages inserted without asking]
// A lane about to take a free slot read the counter too, to keep an
// overflowed launch from taking new keys. In a streaming kernel that is
// every record: the 32 warps that share a page reach it in the same pass
// of their loop, all find its slot free, and each paid three dependent
// round trips to L2 (the key, the counter, the CAS) where two do (pricing
// on the H200, bench/precise triad 20, 2026-11-29: finding the slot cost
// 18.4 ms of the 20 launches, loading the first key alone 4.8). So an
// overflowed launch now takes the free slots it still finds: its footprint
// is not used anyway (the counter makes it incomplete), and once its table
// is full a page without a slot costs at most max_probes loads, in that
// launch only (the next table of the kernel is four times larger).

// A multiplicative hash of the page number (Fibonacci hashing): consecutive
// pages land in different buckets.
STREAMSAN_HD std::uint32_t page_hash(std::uint64_t page) {
  return static_cast<std::uint32_t>((page * 0x9e3779b97f4a7c15ull) >> 32);
}

// Note [Pages inserted without waiting]
// The first lane to record a page takes its slot with one CAS of the slot's
// key (Note [The slot is the bucket] in footprint_layout.h); a lane of
// another warp that reaches the page at the same moment finds the key in
// the CAS's answer or in its load, and records at once. For that the slot
// must be ready before its key is: the host clears the whole table before
// the launch, a memset on the launch's stream (bits and summaries
// included: O(capacity), on the GPU), so the inserting lane neither clears
// nor fences anything. (Before the slot was the bucket, every warp of a
// streaming kernel that reached a new page while another inserted it
// waited: docs/injection.md.)

// A slot's key (Note [The slot is the bucket] in footprint_layout.h).
STREAMSAN_HD std::uint64_t key_of(std::uint64_t page, footprint_kind kind) {
  return ((page << 2) | static_cast<std::uint32_t>(kind)) + 1;
}

// The slot where probing for `key` starts: the key's own unless taken.
STREAMSAN_HD std::uint32_t first_slot(const table_view& t, std::uint64_t key) {
  return page_hash(key) & t.slot_mask;
}

// Note [One probing loop for both regions]
// Probing the spill region with a second loop (or a call) cost every patch
// function registers: ptxas -v (sm_90) counted 16 to 36 bytes more spill
// stores per patch function, and a call out of line more still. One loop
// whose region changes once costs 4 to 16 bytes of spill stores per patch
// function over the table without a spill region.

// The slot of `key`, inserting it if needed; slot_overflowed when neither
// the key's slot nor a free one lies within the buckets it may probe: in
// the main region, max_probes buckets of its first, or main_probes and then
// max_probes of the spill region (Note [The room to grow is read only when
// used] in footprint_layout.h).
// Probing starts at slot `b`, whose key the caller already read as `seen`.
// Nothing reads the overflow counter before a free slot is taken (Note
// [Pages inserted without asking]). A page whose key decoding cannot pack
// (Note [The slot is the bucket]) never finds its key and counts as an
// overflow.
STREAMSAN_HD std::uint32_t find_or_insert_from(const table_view& t, std::uint64_t key,
                                               std::uint32_t b, std::uint64_t seen) {
  // Compared as keys, so the page need not stay live: comparing pages
  // spilled 24 bytes more per call on sm_90 (ptxas -v).
  const std::uint64_t largest_key = key_of(max_page, footprint_kind::atomic);
  // The region probed: its first slot, its mask and its probes.
  std::uint32_t base = 0;
  std::uint32_t mask = t.slot_mask;
  std::uint32_t probes = t.spill_capacity != 0 ? main_probes : max_probes;
  if (t.capacity < probes) probes = t.capacity;
  while (key <= largest_key) {
    for (std::uint32_t probe = 0; probe < probes; ++probe) {
      if (seen == key) return base + b;
      if (seen == 0) {
        seen = lane::cas(&t.pages[base + b].key, 0, key);
        // 0: this lane took the slot; the key: a lane of another warp did.
        if (seen == key) return base + b;
        if (seen == 0) {
          // The first key to spill says so, once.
          if (base != 0 && lane::load(&t.counters->spilled) == 0) {
            lane::fetch_or(&t.counters->spilled, 1);
          }
          return base + b;
        }
      }
      b = (b + 1) & mask;
      seen = lane::load(&t.pages[base + b].key);
    }
    if (base != 0 || t.spill_capacity == 0) break;
    base = t.capacity;
    mask = t.spill_mask;
    probes = t.spill_capacity < max_probes ? t.spill_capacity : max_probes;
    b = page_hash(key) & mask;
    seen = lane::load(&t.pages[base + b].key);
  }
  // Counted once: a launch with a full table would otherwise add to this
  // one word at every access to a page it has no slot for.
  if (lane::load(&t.counters->overflow) == 0) lane::fetch_add(&t.counters->overflow, 1);
  return slot_overflowed;
}

// The slot a lane records (`page`, `kind`) into, or slot_overflowed. A hit
// in the key's first slot is one load and nothing else (Note [No word every
// access reads]).
STREAMSAN_HD std::uint32_t slot_to_record(const table_view& t, std::uint64_t page,
                                          footprint_kind kind) {
  const std::uint64_t key = key_of(page, kind);
  const std::uint32_t b = first_slot(t, key);
  const std::uint64_t seen = lane::load(&t.pages[b].key);
  if (seen == key) return b;
  return find_or_insert_from(t, key, b, seen);
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
