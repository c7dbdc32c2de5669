// Storage for small arrays of 64-byte cache lines: the read and atomic sets
// of the access histories (entry_set.h).
//
// Note [Read sets from a pool of lines]
// A measured footprint leaves millions of segments, and most carry a read
// set of one or two entries. Each set was its own allocation of its lines
// plus one more (to align by hand: Note [Aligned by hand] in entry_set.h),
// so a one-entry set took 128 bytes and malloc's header, and its malloc
// and free were about 16% of the engine's time replaying cuSolverRf's
// --precise trace (perf, 2026-11-30), most of that the frees of a freed
// buffer's history. Arrays of 1, 2, 4 and 8 lines now come from slabs of
// 64-byte-aligned lines, each size with a free list per thread: no header,
// no alignment waste, a pop and a push. A block freed on another thread
// than the one that took it joins that thread's list (memory is memory);
// long lists, and a thread's lists and slabs when it ends, go to a depot
// that other threads take from (Note [Blocks freed on another thread go
// round] in line_pool.cpp). Slabs are never given back to malloc, and are
// recorded so that leak checkers see them reachable. Larger arrays, and
// every array under AddressSanitizer (which must see each block's
// lifetime), keep malloc.
// A slab is 256 KiB, above malloc's mmap threshold: it is mapped apart
// from the heap, and only its touched pages are resident. With 16 KiB
// slabs in the heap, a history built and destroyed again and again (the
// gather benchmarks) found the heap's top given back between rounds and
// its page faults in the chunks' inserts (262,144 accesses 40 -> 57 ms).
// Replaying cuSolverRf's trace on the 2-core host (2026-11-30): 2.18 ->
// 1.74 s of CPU, 886 -> 674 MB resident.
#pragma once

#include <cstddef>
#include <cstdint>

namespace streamsan::line_pool {

inline constexpr std::size_t line = 64;
// The largest array the pool serves, in lines; larger ones are the
// caller's to allocate.
inline constexpr std::uint32_t max_lines = 8;

// Under AddressSanitizer every array keeps malloc, which it watches.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool under_address_sanitizer = true;
#elif defined(__has_feature)
inline constexpr bool under_address_sanitizer = __has_feature(address_sanitizer);
#else
inline constexpr bool under_address_sanitizer = false;
#endif

// Whether an array of `lines` lines (a power of two) comes from the pool.
constexpr bool pooled(std::uint32_t lines) noexcept {
  return !under_address_sanitizer && lines != 0 && lines <= max_lines;
}

// `lines` lines, 64-byte aligned, uninitialized; `lines` is a power of two
// for which pooled() holds. Throws std::bad_alloc.
void* allocate(std::uint32_t lines);
// Gives back what allocate(lines) returned.
void release(void* block, std::uint32_t lines) noexcept;

// Slabs taken from malloc so far, by every thread (tests, tools).
std::size_t slab_count() noexcept;

}  // namespace streamsan::line_pool
