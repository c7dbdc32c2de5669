// The device functions the Compute Sanitizer API patches into instrumented
// kernels: each global-memory access (and each asynchronous copy to or from
// global memory) is folded into the launch's footprint table, which the
// host passes as the callbacks' userdata (Note [Footprints are coalesced on
// the device] in footprint_layout.h). Built with
// `nvcc --fatbin --keep-device-functions -Xptxas --compile-as-tools-patch`
// and embedded in the injection library.
#include <sanitizer_patching.h>

#include "inject/precise/footprint_record.h"

namespace sp = streamsan::precise;

namespace {

// Note [What counts as an atomic]
// The Sanitizer API passes a read-modify-write as an access with both the
// read and the write flag (and no new value: pData is null), or with the
// system-scope atomic flag. Prefetches touch nothing.
__device__ __forceinline__ bool classify(std::uint32_t flags, const void* new_value,
                                         sp::footprint_kind& kind) {
  if (flags & SANITIZER_MEMORY_DEVICE_FLAG_PREFETCH) return false;
  const bool r = flags & SANITIZER_MEMORY_DEVICE_FLAG_READ;
  const bool w = flags & SANITIZER_MEMORY_DEVICE_FLAG_WRITE;
  if ((flags & SANITIZER_MEMORY_DEVICE_FLAG_ATOMSYS) || (r && w)) {
    kind = sp::footprint_kind::atomic;
  } else if (w) {
    kind = sp::footprint_kind::write;
  } else if (r) {
    kind = sp::footprint_kind::read;
  } else {
    return false;
  }
  (void)new_value;
  return true;
}

// Whether the access is recorded (its launch has a table, and it touches
// memory), and as what.
__device__ __forceinline__ bool recorded_kind(const void* userdata, std::uint32_t flags,
                                              const void* new_value, sp::footprint_kind& kind) {
  return userdata != nullptr && classify(flags, new_value, kind);
}

// The launch's table: the callbacks' userdata, when recorded_kind holds.
__device__ __forceinline__ const sp::table_view& view_of(void* userdata) {
  return *static_cast<const sp::table_view*>(userdata);
}

__device__ __forceinline__ unsigned lane_id() {
  unsigned id;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
  return id;
}

struct group_extent {
  std::uint32_t begin, end, size_min, size_max;
};

// Minimum and maximum over the lanes of `group`: a butterfly over the warp
// when the whole warp is one group (a coalesced access), else a walk over
// the group's lanes with one shuffle each. These were written when tools
// patches were thought unable to use the redux instruction
// (__reduce_*_sync); one that did (docs/injection.md, "one add per span")
// compiled for every architecture of the fatbin and gave the examples'
// verdicts on an H200, so redux may serve here too: not measured.
__device__ __forceinline__ group_extent group_reduce(unsigned group, std::uint32_t begin,
                                                     std::uint32_t end, std::uint32_t size) {
  group_extent e{begin, end, size, size};
  if (group == 0xffffffffu) {
    for (int offset = 16; offset > 0; offset /= 2) {
      e.begin = min(e.begin, __shfl_xor_sync(group, e.begin, offset));
      e.end = max(e.end, __shfl_xor_sync(group, e.end, offset));
      e.size_min = min(e.size_min, __shfl_xor_sync(group, e.size_min, offset));
      e.size_max = max(e.size_max, __shfl_xor_sync(group, e.size_max, offset));
    }
    return e;
  }
  for (unsigned rest = group; rest != 0; rest &= rest - 1) {
    const int src = __ffs(rest) - 1;
    e.begin = min(e.begin, __shfl_sync(group, begin, src));
    e.end = max(e.end, __shfl_sync(group, end, src));
    e.size_min = min(e.size_min, __shfl_sync(group, size, src));
    e.size_max = max(e.size_max, __shfl_sync(group, size, src));
  }
  return e;
}

// What the group's first lane computes, handed to the group.
template <typename T, typename Step>
__device__ __forceinline__ T from_leader(unsigned group, unsigned me, Step step) {
  const int leader = __ffs(group) - 1;
  T v = 0;
  if (me == static_cast<unsigned>(leader)) v = step();
  return __shfl_sync(group, v, leader);
}

// Lane `me`'s place among the lanes of `group`: its share of their span.
__device__ __forceinline__ unsigned rank_in(unsigned group, unsigned me) {
  return static_cast<unsigned>(__popc(group & ((1u << me) - 1u)));
}

// Note [A coalesced span is recorded by several lanes]
// Recording an interval is a chain of dependent memory operations at L2
// latency: the key of the page's slot (Note [The slot is the bucket]),
// then per bitmap word a load and perhaps an atomic OR, then the summary's
// atomics. One lane recording a coalesced
// warp access alone walked a 128-byte span's 4 words one after another (a
// float4 access: 16), and the warp waited: on the H200 the launch tracker measuring every launch
// cost the compute-bound pipeline 1.4% more than patched code without a
// table (docs/injection.md, Overhead). So the group's first lane finds the
// slot and hands it to the group with a shuffle, and then each lane of the
// group sets one word, all at once, and adds its own newly set bytes to
// the summary. The summary's maxima are the span's, the same from every
// lane, so the first lane sets them when any lane set new bytes. A slot is
// cleared by the host before the launch (Note [Pages inserted without
// waiting] in footprint_record.h).
__device__ __forceinline__ void record_dense(const sp::table_view& t, unsigned group, unsigned me,
                                             std::uint64_t page, std::uint32_t begin,
                                             std::uint32_t end, sp::footprint_kind kind) {
  const std::uint32_t slot =
      from_leader<std::uint32_t>(group, me, [&] { return sp::slot_to_record(t, page, kind); });
  if (slot == sp::slot_overflowed) return;
  const unsigned rank = rank_in(group, me);
  const std::uint32_t added = sp::set_share(t, slot, begin, end, rank,
                                            static_cast<unsigned>(__popc(group)));
  // The span's bounds once, by the first lane, when any lane set new bytes.
  const bool any_added = __any_sync(group, added != 0);
  sp::add_to_summary(t, slot, begin, end, added, any_added && rank == 0);
}

// What a warp's lanes found out about one access together.
struct warp_access {
  unsigned group, me;
  std::uint64_t page;
  std::uint32_t begin;  // this lane's offset in the page
  std::uint32_t span_begin, span_end;
  bool first_of_address, uniform, dense;
};

// Note [A whole warp's coalesced access] (footprint_record.h): true, with
// `a` filled in as the general path below would, when it applies (a.me is
// the caller's).
__device__ __forceinline__ bool whole_warp_coalesced(unsigned active, std::uint64_t address,
                                                     std::uint32_t size, sp::footprint_kind kind,
                                                     warp_access& a) {
  constexpr unsigned warp = 0xffffffffu;
  if (active != warp) return false;
  const std::uint32_t shape = size << 2 | static_cast<std::uint32_t>(kind);
  const std::uint64_t first = __shfl_sync(warp, address, 0);
  const std::uint32_t first_shape = __shfl_sync(warp, shape, 0);
  if (!__all_sync(warp, sp::lane_continues_coalesced(first, first_shape, address, shape, a.me))) {
    return false;
  }
  a.group = warp;
  a.page = first >> sp::page_shift;
  a.span_begin = static_cast<std::uint32_t>(first & (sp::page_bytes - 1));
  a.span_end = a.span_begin + 32 * size;
  a.begin = static_cast<std::uint32_t>(address & (sp::page_bytes - 1));
  a.first_of_address = true;
  a.uniform = true;
  a.dense = true;
  return true;
}

__device__ __forceinline__ warp_access group_access(std::uint64_t address, std::uint32_t size,
                                                    sp::footprint_kind kind) {
  warp_access a;
  const unsigned active = __activemask();
  a.me = lane_id();
  if (whole_warp_coalesced(active, address, size, kind, a)) return a;
  a.page = address >> sp::page_shift;
  a.begin = static_cast<std::uint32_t>(address & (sp::page_bytes - 1));
  a.group = __match_any_sync(active, (a.page << 2) | static_cast<std::uint32_t>(kind));
  const unsigned same_address = __match_any_sync(a.group, address);
  a.first_of_address = static_cast<unsigned>(__ffs(same_address) - 1) == a.me;
  const unsigned distinct = __popc(__ballot_sync(a.group, a.first_of_address));
  const group_extent e = group_reduce(a.group, a.begin, a.begin + size, size);
  a.span_begin = e.begin;
  a.span_end = e.end;
  a.uniform = e.size_min == e.size_max;
  const bool all_aligned = __all_sync(a.group, (a.begin - a.span_begin) % size == 0);
  a.dense = sp::group_is_dense(a.span_begin, a.span_end, distinct, a.uniform, all_aligned, size);
  return a;
}

// Note [A warp records an interval once]
// The lanes of a warp that access one page with one kind form a group. When
// the group's accesses tile one span exactly (a coalesced access), the
// group records the span once (Note [A coalesced span is recorded by
// several lanes]); otherwise each distinct address is recorded by the
// first lane that has it.
__device__ __forceinline__ void record_warp(const sp::table_view& t, std::uint64_t address,
                                            std::uint32_t size, sp::footprint_kind kind) {
  const warp_access a = group_access(address, size, kind);
  if (a.dense) {
    record_dense(t, a.group, a.me, a.page, a.span_begin, a.span_end, kind);
  } else if (a.first_of_address || !a.uniform) {
    sp::record_interval(t, a.page, a.begin, a.begin + size, kind);
  }
}

__device__ __forceinline__ bool warp_leader() {
  return static_cast<unsigned>(__ffs(__activemask()) - 1) == lane_id();
}

}  // namespace

extern "C" __device__ __noinline__ SanitizerPatchResult streamsan_global_access(
    void* userdata, std::uint64_t, void* ptr, std::uint32_t size, std::uint32_t flags,
    const void* new_value) {
  sp::footprint_kind kind;
  if (!recorded_kind(userdata, flags, new_value, kind)) return SANITIZER_PATCH_SUCCESS;
  record_warp(view_of(userdata),
              reinterpret_cast<std::uint64_t>(ptr), size, kind);
  return SANITIZER_PATCH_SUCCESS;
}

// The same without warp aggregation: every lane records its own access.
extern "C" __device__ __noinline__ SanitizerPatchResult streamsan_global_access_per_lane(
    void* userdata, std::uint64_t, void* ptr, std::uint32_t size, std::uint32_t flags,
    const void* new_value) {
  sp::footprint_kind kind;
  if (!recorded_kind(userdata, flags, new_value, kind)) return SANITIZER_PATCH_SUCCESS;
  sp::record_span(view_of(userdata),
                  reinterpret_cast<std::uint64_t>(ptr), size, kind);
  return SANITIZER_PATCH_SUCCESS;
}

// cp.async: a global read into shared memory (src is null when nothing is read).
extern "C" __device__ __noinline__ SanitizerPatchResult streamsan_memcpy_async(
    void* userdata, std::uint64_t, void* src, std::uint32_t, std::uint32_t size) {
  if (userdata == nullptr || src == nullptr) return SANITIZER_PATCH_SUCCESS;
  record_warp(view_of(userdata),
              reinterpret_cast<std::uint64_t>(src), size, sp::footprint_kind::read);
  return SANITIZER_PATCH_SUCCESS;
}

// Bulk copies: every active lane passes the same values, the first records.
extern "C" __device__ __noinline__ SanitizerPatchResult streamsan_bulk_global_to_shared(
    void* userdata, std::uint64_t, std::uint64_t src, std::uint32_t, std::uint32_t,
    std::uint32_t data, std::uint32_t) {
  if (userdata == nullptr || !warp_leader()) return SANITIZER_PATCH_SUCCESS;
  sp::record_span(view_of(userdata), src,
                  std::uint64_t{data & 0xffffu} * 16, sp::footprint_kind::read);
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult streamsan_bulk_shared_to_global(
    void* userdata, std::uint64_t, std::uint64_t dst, std::uint32_t, std::uint32_t blocks) {
  if (userdata == nullptr || !warp_leader()) return SANITIZER_PATCH_SUCCESS;
  sp::record_span(view_of(userdata), dst, std::uint64_t{blocks} * 16,
                  sp::footprint_kind::write);
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult streamsan_bulk_reduction_to_global(
    void* userdata, std::uint64_t, std::uint64_t dst, std::uint32_t, std::uint32_t blocks) {
  if (userdata == nullptr || !warp_leader()) return SANITIZER_PATCH_SUCCESS;
  sp::record_span(view_of(userdata), dst, std::uint64_t{blocks} * 16,
                  sp::footprint_kind::atomic);
  return SANITIZER_PATCH_SUCCESS;
}

// The probe's pricing functions below: an access a dense group (a
// coalesced access) makes, its group formed.
__device__ __forceinline__ bool dense_group(void* userdata, void* ptr, std::uint32_t size,
                                            std::uint32_t flags, const void* new_value,
                                            sp::footprint_kind& kind, warp_access& a) {
  if (!recorded_kind(userdata, flags, new_value, kind)) return false;
  a = group_access(reinterpret_cast<std::uint64_t>(ptr), size, kind);
  return a.dense;
}

// Never true, but the compiler cannot know it: keeps a result live.
__device__ __forceinline__ void keep_live(const sp::table_view& t, bool never) {
  if (never) atomicAdd(&t.counters->overflow, 1u);
}

// Probe only (bench/precise, PROBE_ACCESS_FN): pricing variants of
// streamsan_global_access. `_return` returns at once, table or not (what a
// measured launch costs besides recording its accesses); `_grouping` also
// forms the warp's groups and extents and records nothing (what the warp
// collectives cost without the table's loads and atomics).
extern "C" __device__ __noinline__ SanitizerPatchResult streamsan_global_access_return(
    void*, std::uint64_t, void*, std::uint32_t, std::uint32_t, const void*) {
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult streamsan_global_access_grouping(
    void* userdata, std::uint64_t, void* ptr, std::uint32_t size, std::uint32_t flags,
    const void* new_value) {
  sp::footprint_kind kind;
  warp_access a;
  if (dense_group(userdata, ptr, size, flags, new_value, kind, a)) {
    // Never true (a page offset is below 2^12): the collectives stay.
    const auto& t = view_of(userdata);
    keep_live(t, a.span_end == t.capacity + 0x80000000u);
  }
  return SANITIZER_PATCH_SUCCESS;
}

// Probe only (bench/precise, PROBE_ACCESS_FN): the steps of
// streamsan_global_access priced apart, for dense groups (coalesced
// accesses). `_bucket` also loads the key of the page's first slot;
// `_lookup` finds the slot as recording does, inserting pages, and sets no
// bit; `_words` also sets the span's bitmap words and leaves the page's
// summary alone. Launches
// measured with them decode to nothing (docs/injection.md, Overhead).
// Runs `step(t, a, kind)` on a dense group's first lane, hands its result
// to the group and keeps it live (`never` is a value it cannot take).
template <typename T, typename Step>
__device__ __forceinline__ SanitizerPatchResult price_leader(void* userdata, void* ptr,
                                                             std::uint32_t size,
                                                             std::uint32_t flags,
                                                             const void* new_value, T never,
                                                             Step step) {
  sp::footprint_kind kind;
  warp_access a;
  if (!dense_group(userdata, ptr, size, flags, new_value, kind, a)) return SANITIZER_PATCH_SUCCESS;
  const auto& t = view_of(userdata);
  keep_live(t, from_leader<T>(a.group, a.me, [&] { return step(t, a, kind); }) == never);
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult streamsan_global_access_bucket(
    void* userdata, std::uint64_t, void* ptr, std::uint32_t size, std::uint32_t flags,
    const void* new_value) {
  return price_leader<std::uint64_t>(
      userdata, ptr, size, flags, new_value, 1,
      [](const sp::table_view& t, const warp_access& a, sp::footprint_kind kind) {
        return sp::lane::load(&t.pages[sp::first_slot(t, sp::key_of(a.page, kind))].key);
      });
}

// A dense group's slot, found as recording finds it; false when the access
// is not a dense group's.
__device__ __forceinline__ bool dense_slot(void* userdata, void* ptr, std::uint32_t size,
                                           std::uint32_t flags, const void* new_value,
                                           warp_access& a, std::uint32_t& slot) {
  sp::footprint_kind kind;
  if (!dense_group(userdata, ptr, size, flags, new_value, kind, a)) return false;
  const auto& t = view_of(userdata);
  slot = from_leader<std::uint32_t>(a.group, a.me,
                                    [&] { return sp::slot_to_record(t, a.page, kind); });
  return true;
}

// `_lookup` (set_words false) and `_words`.
template <bool set_words>
__device__ __forceinline__ SanitizerPatchResult price_slot(void* userdata, void* ptr,
                                                           std::uint32_t size, std::uint32_t flags,
                                                           const void* new_value) {
  warp_access a;
  std::uint32_t slot;
  if (!dense_slot(userdata, ptr, size, flags, new_value, a, slot)) return SANITIZER_PATCH_SUCCESS;
  const auto& t = view_of(userdata);
  if (!set_words || slot == sp::slot_overflowed) {
    keep_live(t, slot == 0xfffffffeu);
    return SANITIZER_PATCH_SUCCESS;
  }
  const std::uint32_t added = sp::set_share(t, slot, a.span_begin, a.span_end,
                                            rank_in(a.group, a.me),
                                            static_cast<unsigned>(__popc(a.group)));
  keep_live(t, added == 0xffffffffu);
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult streamsan_global_access_lookup(
    void* userdata, std::uint64_t, void* ptr, std::uint32_t size, std::uint32_t flags,
    const void* new_value) {
  return price_slot<false>(userdata, ptr, size, flags, new_value);
}

extern "C" __device__ __noinline__ SanitizerPatchResult streamsan_global_access_words(
    void* userdata, std::uint64_t, void* ptr, std::uint32_t size, std::uint32_t flags,
    const void* new_value) {
  return price_slot<true>(userdata, ptr, size, flags, new_value);
}

// Probe only (bench/precise): counts accesses by (flags, new value present,
// size) into the table's bitmap words, to learn how the driver reports each
// kind of access.
extern "C" __device__ __noinline__ SanitizerPatchResult streamsan_global_access_census(
    void* userdata, std::uint64_t, void*, std::uint32_t size, std::uint32_t flags,
    const void* new_value) {
  if (userdata == nullptr) return SANITIZER_PATCH_SUCCESS;
  const auto& t = view_of(userdata);
  const unsigned size_index = size <= 1 ? 0 : size <= 2 ? 1 : size <= 4 ? 2 : size <= 8 ? 3 : 4;
  const unsigned cell = ((flags & 0xf) << 4) | ((new_value != nullptr) << 3) | size_index;
  atomicAdd(&t.bits[cell], 1u);
  return SANITIZER_PATCH_SUCCESS;
}
