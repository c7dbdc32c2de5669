// Allocations, frees, and the accesses of launches, host functions, host
// accesses, copies and memsets.
//
// Note [Frees check like writes]
// Freeing memory ends every use of it, so a free must be ordered after all
// accesses, reads included, exactly as a write would (S-MEM-5). A free that
// is not reports free_while_in_use, once per unordered earlier access (its
// hazard says whether that access wrote or read). Which context "does" the
// free depends on the mode:
//   synchronizing (cudaFree)       the host, after joining every stream of the
//                                  allocation's device (S-MEM-5); for
//                                  stream-ordered memory, unsynchronized;
//   unsynchronized (cudaFreeHost)  the host as it is: it must already be
//                                  ordered after every use;
//   stream_ordered (cudaFreeAsync) an operation on its stream;
//   cached (caching allocator)     nothing is checked: the bytes stay mapped
//                                  and their history stays on the segment
//                                  (Note [Histories live on root allocations]).
// Afterwards any access naming the freed id is use_after_free, however it is
// ordered: the id is dead (and a reused block has a new id).
//
// Note [Stream-ordered allocations]
// cudaMallocAsync is an operation on its stream; the memory is valid only
// for work ordered after it (S-MEM-5). The allocation keeps the epoch of that
// operation, and every access to it (or to a block carved out of it) checks
// that the accessing context covers it, else use_before_alloc.
//
// Note [Calls that do not synchronize]
// Only documented synchronization is modelled (semantics.md: code relying on
// a "might" is a latent bug). Checked against the "API synchronization
// behavior" and "Stream synchronization behavior" pages, each call's
// reference entry and semantics.md (table in docs/engine.md):
//   cudaFree                 synchronizes the device (S-MEM-5), except for
//                            stream-ordered memory ("will not perform any
//                            implicit synchronization");
//   cudaMalloc, cudaMallocHost, cudaHostAlloc, cudaMallocManaged,
//   cudaHostRegister, cudaFreeHost, cudaHostUnregister
//                            nothing documented: no ordering (alloc_record;
//                            free_mode::unsynchronized);
//   cudaStreamDestroy, cudaEventDestroy
//                            return at once, not waiting for pending work
//                            (S-STREAM-9);
//   cudaDeviceSetLimit       the device blocks "if necessary" (stack size):
//                            a might, so nothing, and no record either;
//   cache configuration      "may insert a device-side synchronization
//                            point": nothing.
#include <algorithm>
#include <array>
#include <limits>

#include "sanitizer/engine/engine_impl.h"
#include "sanitizer/log/copy_synchronization.h"

namespace streamsan {
namespace {

// Offsets from a corrupt log must not wrap around and alias low bytes.
std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::uint64_t>::max() : sum;
}

// The access's own fields of its entry.
void take_access(access_entry& entry, const access& a) noexcept {
  entry.alloc = a.range.alloc;
  entry.offset = a.range.offset;
  entry.size = a.range.size;
  entry.mode = a.mode;
  entry.origin = a.origin;
}

// The bytes `a` touches in its root's history.
struct root_bytes {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};
root_bytes in_root(const allocation& al, const access& a) noexcept {
  const std::uint64_t begin = saturating_add(al.root_offset, a.range.offset);
  return {begin, saturating_add(begin, a.range.size)};
}

}  // namespace

// Inlined into the launch path: it runs for every access of every launch.
//
// Note [One test for the unusual allocation]
// Every access tested its allocation's `freed`, its root's `freed` and its
// root's `created_when` (a stream-ordered allocation), three branches and
// ten instructions, though nearly every allocation is live and made by
// cudaMalloc or a caching allocator. The allocation keeps `unusual`, the
// or of its `freed` and `created_when` (allocation_table.h, kept by the
// setters that keep the copies), and an access tests its own `freed` and
// its root's `unusual`, and only then which it is. engine_replay under
// callgrind (release, 2026-12-02): 555.2 -> 546.2 instructions per launch,
// the same L1 misses. Which it is, and the reports, are out of line
// (usable()): inline, the compiler kept the allocation's `freed` on the
// stack for them, and more values besides. 509.8 -> 502.8 (after the
// Notes that follow). So is the count of an access to no known
// allocation (count_untracked()): 499.8 -> 496.8.
template <bool in_launch>
[[gnu::always_inline]] inline void engine_impl::apply_access(const access& a, allocation* al,
                                                             access_entry& entry,
                                                             const execution_context& context,
                                                             clock_view view) {
  if (al == nullptr) [[unlikely]] {
    count_untracked(a, in_launch);
    return;
  }
  take_access(entry, a);
  allocation& root = *al->root;
  // Note [One test for the unusual allocation]
  if (al->freed || root.unusual) [[unlikely]] {
    if (!usable(*al, entry, context)) {
      if (in_launch) --stats_.accesses_checked;
      return;
    }
  }
  if (!in_launch) ++stats_.accesses_checked;
  const auto [begin, end] = in_root(*al, a);
  // Note [Conflicts cleared only when found] (access_history.h), Note [The
  // conflicting access out of line]
  if (!root.history.apply_if_ordered(begin, end, entry, view)) [[unlikely]] {
    apply_unordered(*al, begin, end, entry, context);
  }
  if (!in_launch && observer_ != nullptr) [[unlikely]] announce_access(*al, entry, context);
}

// Note [The conflicting access out of line]
// The path of an access that some stored access is unordered with (clear
// the scratch, check, record) was inlined into the launch loop, and
// check()'s visitor, which holds the addresses of the bounds, the mode and
// the scratch, was built there before the loop: stores and spills every
// launch paid for a path a race-free launch never takes. Out of line in
// the history (then access_history::apply_exact_unordered), engine_replay
// under callgrind (release, 2026-12-03): 497.7 -> 492.7 instructions per
// launch. The history's search for a segment that is not the only one
// stayed inline, and both cold calls kept the history's and the scratch's
// addresses in registers computed before every check. Now the history
// only answers whether an access to its only segment is ordered (and
// then records it: apply_if_ordered), and everything else, the search
// included, is this one call of the engine with what it already holds:
// 454.7 -> 443.7. A racing access is tested twice, a call apart.
void engine_impl::apply_unordered(const allocation& al, std::uint64_t begin, std::uint64_t end,
                                  const access_entry& entry, const execution_context& context) {
  conflicts_.clear();
  al.root->history.apply(begin, end, entry, context.clock, conflicts_);
  if (!conflicts_.empty()) report_conflicts(al, entry, diagnostic_kind::stream_race);
}

void engine_impl::count_untracked(const access& a, bool counted) noexcept {
  ++(is_none(a.range.alloc) ? stats_.accesses_untracked : stats_.accesses_unknown_alloc);
  if (counted) --stats_.accesses_checked;
}

bool engine_impl::usable(const allocation& al, const access_entry& entry,
                         const execution_context& context) {
  const allocation& root = *al.root;
  if (al.freed || root.freed) {
    report_use_after_free(al, entry);
    return false;
  }
  // Note [Stream-ordered allocations]
  if (!context.clock.covers(root.created_when)) report_use_before_alloc(al, entry);
  return true;
}

void engine_impl::announce_access(const allocation& a, const access_entry& entry,
                                  const execution_context& context) {
  observed_access o;
  o.context = context.ref();
  o.address = a.ref.address == 0 ? 0 : saturating_add(a.ref.address, entry.offset);
  o.size = entry.size;
  o.mode = entry.mode;
  o.origin = entry.origin;
  o.memory = a.root->ref.kind;
  o.alloc = entry.alloc;
  o.op = entry.op;
  o.name = entry.name;
  o.stack = entry.stack;
  o.seq = entry.seq;
  observer_->accessed(o);
}

void engine_impl::apply_access(const access& a, access_entry& entry,
                               const execution_context& context) {
  // none is never found
  apply_access(a, allocations_.find(a.range.alloc), entry, context, context.clock.view());
}

// Inlined into the launch path (stream_work), like apply_access. A launch
// with many accesses (a measured footprint) goes through the batches of
// Note [Many accesses merged in one pass] where it can.
//
// Note [One clock view per launch]
// Checking an access reads the context's clock through a clock_view (its
// data and size, vector_clock.h). Taken in access_history::apply, the view
// was built again for every access: the compiler cannot know that storing
// the access into a history leaves the clock's vector alone, so it loaded
// both again. Nothing changes a clock while one operation's accesses are
// applied (the context ticked before them), so the view is taken once,
// here: engine_replay under callgrind, 609.2 -> 597.2 instructions per
// launch (three accesses), the same L1 misses.
//
// Note [Allocations found before they are checked]
// Each access waits on a chain of loads: the id table's page, the
// allocation, its history's segment, a read set's entries. The lines miss
// in L1 (engine_replay under callgrind, 2026-12-02: 13.7 misses per launch
// of three accesses) and mostly hit L2 or L3, so what costs is their
// latency, one chain after another: checking an access ends in branches on
// what it loaded, and the next access's loads start only once those
// resolve. So a launch first looks its accesses' allocations up, a few at a
// time (prefetched_accesses), and prefetches each allocation's first line,
// and then checks them: the page loads and the allocations' lines are in
// flight together. BM_EngineLaunches, release, `taskset -c 1`, 12
// interleaved runs: 0.856 ms per period (median) against 1.055, run by run
// 0.86 of the time. The same L1 misses; about 55 more instructions per
// launch (the two loops and the array). Prefetching the segment as well (a
// load of the history's first chunk, then a prefetch) gained nothing more,
// nor, once the segment lay in the allocation's second line (Note [The
// only segment kept inside], access_history.h), a prefetch of that line:
// 0.78 against 0.80 of the time run by run, 12 interleaved runs.
//
// Note [Per launch, not per access]
// Two things each access did can be done once per launch: counting it in
// stats_.accesses_checked (the launch counts all its accesses first, and
// an access found unknown or freed takes itself back off), and testing
// whether an observer listens (announce_access): a launch with an
// observer goes the way of a long one, apply_accesses_batched, whose
// accesses (one by one below its threshold) announce themselves as before.
// engine_replay under callgrind (release, 2026-12-02): 546.2 -> 541.2
// instructions per launch.
[[gnu::always_inline]] inline void engine_impl::apply_accesses_inline(
    std::span<const access> accesses, access_entry& entry, const execution_context& context) {
  // Note [Per launch, not per access], Note [One group of accesses inline]
  if (accesses.size() > prefetched_accesses || observer_ != nullptr) [[unlikely]] {
    apply_long_or_observed(accesses, entry, context);
    return;
  }
  apply_access_group(accesses, entry, context, context.clock.view());
}

// Note [One group of accesses inline]
// A launch with at most prefetched_accesses accesses (nearly all) is one
// group: looked up, then checked, with no loop around the two. The loop
// over groups kept the span's rest, the group's size and the view on the
// stack for its next round; longer launches below the batch threshold
// take that loop, out of line. The lookups are unrolled by hand (the
// pragma): without the outer loop the compiler made them a loop again,
// whose pointer into `found` it kept on the stack. engine_replay under
// callgrind (release, 2026-12-03): 492.7 -> 484.7 instructions per launch
// with the group alone, 463.7 with the lookups unrolled (the view's size
// then stays in a register through the checks), the same L1 misses.
// A launch longer than a group and one with an observer are told apart
// from the rest by one test, and from each other out of line
// (apply_long_or_observed): 463.7 -> 461.7.
[[gnu::always_inline]] inline void engine_impl::apply_access_group(
    std::span<const access> accesses, access_entry& entry, const execution_context& context,
    clock_view view) {
  stats_.accesses_checked += accesses.size();
  std::array<allocation*, prefetched_accesses> found;
  const std::size_t n = accesses.size();
#pragma GCC unroll 8
  for (std::size_t i = 0; i < n; ++i) {
    allocation* al = allocations_.find(accesses[i].range.alloc);
    if (al != nullptr) __builtin_prefetch(al);
    found[i] = al;
  }
  for (std::size_t i = 0; i < n; ++i) {
    apply_access<true>(accesses[i], found[i], entry, context, view);
  }
}

void engine_impl::apply_long_or_observed(std::span<const access> accesses, access_entry& entry,
                                         const execution_context& context) {
  if (accesses.size() >= batch_threshold || observer_ != nullptr) {
    apply_accesses_batched(accesses, entry, context);
    return;
  }
  const clock_view view = context.clock.view();
  while (!accesses.empty()) {
    const std::size_t n = std::min(accesses.size(), prefetched_accesses);
    apply_access_group(accesses.first(n), entry, context, view);
    accesses = accesses.subspan(n);
  }
}

// How many accesses from the first on can go to one history's apply_batch:
// live allocations of one root, sorted and disjoint in its bytes. Builds
// them into batch_, and their allocations into batch_allocations_.
std::size_t engine_impl::gather_batch(std::span<const access> accesses, const access_entry& entry,
                                      allocation*& root) {
  batch_.clear();
  batch_allocations_.clear();
  root = nullptr;
  for (const access& a : accesses) {
    allocation* al = allocations_.find(a.range.alloc);
    if (al == nullptr || al->freed || al->root->freed) break;
    if (root != nullptr && al->root != root) break;
    const auto [begin, end] = in_root(*al, a);
    if (!batch_.empty() && begin < batch_.back().end) break;
    root = al->root;
    take_access(batch_.emplace_back(access_history::batch_access{begin, end, entry}).entry, a);
    batch_allocations_.push_back(al);
  }
  return batch_.size();
}

// Note [Many accesses merged in one pass]: runs of accesses of one root go
// to its history at once; the rest one by one, as apply_access does. The
// checks around the history's (a use before a stream-ordered allocation, the
// reports, the observer) are apply_access's, access by access, in order.
void engine_impl::apply_accesses_batched(std::span<const access> accesses, access_entry& entry,
                                         const execution_context& context) {
  while (!accesses.empty()) {
    allocation* root = nullptr;
    const std::size_t n = gather_batch(accesses, entry, root);
    if (n < batch_threshold) {
      const std::size_t one_by_one = std::max<std::size_t>(n, 1);
      for (const access& a : accesses.first(one_by_one)) {
        apply_access(a, allocations_.find(a.range.alloc), entry, context, context.clock.view());
      }
      accesses = accesses.subspan(one_by_one);
      continue;
    }
    stats_.accesses_checked += n;
    batch_conflicts_.clear();
    batch_slices_.clear();
    root->history.apply_batch(batch_, context.clock, batch_conflicts_, batch_slices_);
    // Note [Stream-ordered allocations]: the same answer for every access.
    const bool before_alloc =
        !root->created_when.is_none() && !context.clock.covers(root->created_when);
    std::size_t next_slice = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const allocation& al = *batch_allocations_[i];
      if (before_alloc) [[unlikely]] report_use_before_alloc(al, batch_[i].entry);
      if (next_slice < batch_slices_.size() && batch_slices_[next_slice].access == i) {
        const auto& slice = batch_slices_[next_slice++];
        conflicts_.assign(batch_conflicts_.begin() + static_cast<std::ptrdiff_t>(slice.first),
                          batch_conflicts_.begin() + static_cast<std::ptrdiff_t>(slice.last));
        report_conflicts(al, batch_[i].entry, diagnostic_kind::stream_race);
      }
      if (observer_ != nullptr) [[unlikely]] announce_access(al, batch_[i].entry, context);
    }
    // As apply_access leaves it: the last access's fields.
    entry = batch_[n - 1].entry;
    accesses = accesses.subspan(n);
  }
}

void engine_impl::apply_accesses(std::span<const access> accesses, access_entry& entry,
                                 const execution_context& context) {
  apply_accesses_inline(accesses, entry, context);
}

void engine_impl::check_free(allocation& a, const access_entry& free_op,
                             const execution_context& context) {
  allocation& root = *a.root;
  // A root is checked whole, out-of-bounds accesses included; a block only
  // over its own bytes (the rest of the segment belongs to other blocks).
  const std::uint64_t begin = &root == &a ? 0 : a.root_offset;
  const std::uint64_t end = &root == &a ? std::numeric_limits<std::uint64_t>::max()
                                        : saturating_add(a.root_offset, a.ref.size);
  conflicts_.clear();
  root.history.find_unordered(begin, end, context.clock, conflicts_);
  if (!conflicts_.empty()) report_conflicts(a, free_op, diagnostic_kind::free_while_in_use);
}

// A cached block is memory of its segment's kind; one whose segment is
// unknown is taken for device memory (what caching allocators hand out).
memory_kind engine_impl::effective_kind(memory_kind kind, alloc_id id) const noexcept {
  if (kind != memory_kind::cached_block) return kind;
  const allocation* a = allocations_.find(id);
  const memory_kind root = a != nullptr ? a->root->ref.kind : memory_kind::device;
  return root == memory_kind::cached_block ? memory_kind::device : root;
}

// ---- allocations and frees ----

void engine_impl::on(const record_header& h, const alloc_record& r) {
  thread_state& t = thread_of(h);
  allocation* a = is_none(r.alloc) ? nullptr : allocations_.create(r, h.seq, h.stack);
  if (a == nullptr) {
    ++stats_.ignored_records;  // no id, or the id is already allocated
    return;
  }
  if (r.kind != memory_kind::stream_ordered) return;
  if (is_none(r.stream)) {
    // Note [Graph allocations]: a graph's alloc node allocates it, at each launch.
    allocations_.mark_unborn(*a);
    return;
  }
  // Note [Stream-ordered allocations]
  stream_state& s = stream_for(h, t, r.stream, operation_kind::alloc);
  if (s.destroyed) return;  // Note [Work on a destroyed stream]
  if (s.capturing) return;  // a graph allocation node; its launches order it
  access_entry created = entry_for(h, t, enqueue(t, s), operation_kind::alloc, r.label);
  if (window_) [[unlikely]] window_stream_op(h, t, s, operation_kind::alloc, r.label);
  created.alloc = r.alloc;
  created.size = r.size;
  created.mode = access_mode::write;
  a->set_created(created);
}

void engine_impl::on(const record_header& h, const free_record& r) {
  thread_state& t = thread_of(h);
  allocation* a = allocations_.find(r.alloc);
  if (a == nullptr) {
    ++stats_.unknown_frees;
    return;
  }
  access_entry op = entry_for(h, t, epoch{}, operation_kind::free, a->ref.label);
  op.alloc = r.alloc;
  op.size = a->ref.size;
  op.mode = access_mode::write;
  if (a->freed || a->root->freed) {
    op.when = host_action(t);
    if (window_) [[unlikely]] window_host_op(h, t, operation_kind::free, a->ref.label);
    report_use_after_free(*a, op);  // a double free
    return;
  }
  // Note [Frees check like writes]
  free_mode mode = r.mode;
  if (mode == free_mode::synchronizing && a->ref.kind == memory_kind::stream_ordered) {
    // cudaFree of cudaMallocAsync memory "will not perform any implicit
    // synchronization" (rt-api, cudaFree; Note [Calls that do not
    // synchronize]).
    mode = free_mode::unsynchronized;
  }
  switch (mode) {
    case free_mode::synchronizing: {
      op.when = host_action(t);
      const device_state* d = contexts_.find_device(a->ref.device);
      if (d != nullptr) {
        for (const execution_context* c : d->streams) contexts_.join(*t.context, *c);
      }
      if (window_) [[unlikely]] {
        const auto id = window_host_op(h, t, operation_kind::free, a->ref.label);
        if (d != nullptr) {
          for (const execution_context* c : d->streams) {
            window_->join(c->slot, id, timeline_edge_kind::device_sync);
          }
        }
      }
      check_free(*a, op, *t.context);
      break;
    }
    case free_mode::unsynchronized:
      op.when = host_action(t);
      if (window_) [[unlikely]] window_host_op(h, t, operation_kind::free, a->ref.label);
      check_free(*a, op, *t.context);
      break;
    case free_mode::stream_ordered: {
      stream_state& s = stream_for(h, t, r.stream, operation_kind::free);
      if (s.destroyed) return;  // Note [Work on a destroyed stream]
      if (s.capturing) return;  // a graph free node
      op.when = enqueue(t, s);
      if (window_) [[unlikely]] window_stream_op(h, t, s, operation_kind::free, a->ref.label);
      check_free(*a, op, *s.context);
      a->free_context = context_kind::stream;
      a->free_stream = s.id;
      break;
    }
    case free_mode::cached:
      op.when = host_action(t);
      break;
  }
  a->free_op = op;
  // May forget `a` at once when nothing dead is remembered: last use of it.
  allocations_.mark_freed(*a, mode == free_mode::cached);
}

// ---- work ----

namespace {

string_id name_of(const kernel_launch& r) noexcept { return r.kernel; }
string_id name_of(const host_func& r) noexcept { return r.name; }
bool cooperative_of(const kernel_launch& r) noexcept { return r.cooperative; }
bool cooperative_of(const host_func&) noexcept { return false; }

}  // namespace

// Inlined into its two handlers: with the accesses, the whole launch path
// is one function (no calls on the common path).
//
// Note [The record's fields read where they are used]
// stream_work took the record's name, accesses and cooperative flag as
// arguments, so they were loaded on entry and, to live across the calls
// of the rare paths (a new thread, an unknown stream), kept on the stack:
// four loads, four stores and their reloads per launch. It takes the
// record and reads each field where it is used. engine_replay under
// callgrind (release, 2026-12-02): 502.8 -> 499.8 instructions per launch.
template <class Work>
[[gnu::always_inline]] inline void engine_impl::stream_work(const record_header& h,
                                                            const Work& r, operation_kind op) {
  thread_state& t = thread_of(h);
  stream_state& s = stream_for(h, t, r.stream, op);
  if (s.destroyed) return;  // Note [Work on a destroyed stream]
  if (s.capturing) {
    stats_.accesses_captured += r.accesses.size();
    return;
  }
  const string_id name = name_of(r);
  access_entry entry = entry_for(h, t, enqueue(t, s), op, name);
  entry.cooperative = cooperative_of(r);
  if (op == operation_kind::host_func && observer_ != nullptr) {
    observer_->host_function_enqueued(s.context->ref(), name, h.stack, h.seq);
  }
  if (window_) [[unlikely]] window_stream_op(h, t, s, op, name);
  apply_accesses_inline(r.accesses, entry, *s.context);
}

// Note [A launch reports its own pending diagnostics]
// on_record sends what a record found to the log once the record is
// applied (report_pending, Note [One diagnostic per pair of operations]).
// A launch, dispatched first (Note [Launches dispatched first]), does it
// itself, at its end: on_record then returns as soon as the launch
// returns, and the compiler makes the call a jump, with no frame of its
// own around it (the other records go through on_other_record). With an
// observer, a launch comes through on_other_record too, which reports
// after the observer hears record_ends(), as before: the launch leaves
// its diagnostics pending then. engine_replay under callgrind (release,
// 2026-12-02): 520.2 -> 509.8 instructions per launch (the event records
// take one jump more).
void engine_impl::on(const record_header& h, const kernel_launch& r) {
  stream_work(h, r, operation_kind::kernel);
  if (!pending_.empty()) [[unlikely]] {
    if (observer_ == nullptr) report_pending();
  }
}

// S-HOSTFN-1: a host function is a stream operation like a kernel; its
// accesses are ordered by the stream, not by the host thread that enqueued it.
void engine_impl::on(const record_header& h, const host_func& r) {
  stream_work(h, r, operation_kind::host_func);
}

void engine_impl::on(const record_header& h, const host_access& r) {
  thread_state& t = thread_of(h);
  access_entry entry = entry_for(h, t, host_action(t), operation_kind::host_access, r.what);
  if (window_) [[unlikely]] window_host_op(h, t, operation_kind::host_access, r.what);
  apply_accesses(r.accesses, entry, *t.context);
}

// ---- copies and memsets ----

// Note [Copy synchronization]
// A copy is an operation on its stream that reads src and writes dst; a
// memset one that writes dst. Synchronous forms are operations of the
// calling thread's default stream, so the default-stream rules order them
// like a kernel (S-DEFAULT-1: on the legacy stream, after the prior work of
// every blocking stream). Managed memory counts as device memory, since
// copies of it are stream ordered (S-MEM-6), and a cached block as its
// segment's kind. What the host is ordered after when the call returns is
// sanitizer/log/copy_synchronization.h (Note [What a synchronous call waits
// for]), shared with the runtime and both backends:
//   sync, pageable -> device  S-COPY-1: "a stream sync is performed before
//                             the copy is initiated": the host joins the
//                             stream's clock as it is (its own prior work,
//                             not the blocking streams the copy itself will
//                             wait for), then stages the source itself: the
//                             source read is a host access; the device write
//                             is a stream access the host does not wait for;
//                             nothing guarantees that DMA, nothing has been
//                             seen to break it: possible races only (Note
//                             [Staged uploads]).
//   sync, pinned -> device    S-COPY-1: synchronous with the host.
//   sync, device -> host      S-COPY-1: returns once the copy has completed.
//   sync, host -> host        S-COPY-1: fully synchronous, and issued to the
//                             default stream: on the legacy stream the host
//                             is ordered after every blocking stream's prior
//                             work (observed on an H100, semantics.md).
//   async, host -> host       S-COPY-2: synchronous; an operation of its
//                             stream (S-STREAM-1), so the host is ordered
//                             after that stream's prior work.
//   In these four the host joins the stream after the operation.
//   sync, device -> device    no host synchronization.
//   async, anything else      fully asynchronous. The documentation says a
//                             pageable async copy "might be synchronous";
//                             streamsan never assumes it is, so code that
//                             relies on it is reported.
//   memset                    S-COPY-4: the synchronous form into pinned
//                             host memory or managed memory is fully
//                             synchronous (the host joins after); every
//                             other memset and every cudaMemsetAsync is not.
void engine_impl::on(const record_header& h, const memcpy_record& r) { copy(h, r); }

void engine_impl::copy(const record_header& h, const memcpy_record& r) {
  thread_state& t = thread_of(h);
  stream_state& s = stream_for(h, t, r.stream, operation_kind::memcpy);
  if (s.destroyed) return;  // Note [Work on a destroyed stream]
  if (s.capturing) {
    stats_.accesses_captured += 2;
    return;
  }
  const memory_kind src_kind = effective_kind(r.src_kind, r.src.alloc);
  const memory_kind dst_kind = effective_kind(r.dst_kind, r.dst.alloc);
  const access src{r.src, access_mode::read};
  const access dst{r.dst, access_mode::write};

  if (copy_stages_source(r.async, src_kind, dst_kind)) {
    access_entry staged = entry_for(h, t, host_action(t), operation_kind::memcpy, {});
    host_joins_stream(t, s);  // the stream sync, before the copy's own joins
    if (window_) [[unlikely]] {
      const auto id = window_host_op(h, t, operation_kind::memcpy, {});
      window_host_joins_stream(t, id, s, timeline_edge_kind::stream_sync);
    }
    apply_access(src, staged, *t.context);
    // Note [Staged uploads] (diagnostic.h): races on the DMA's write are
    // possible races.
    access_entry entry = entry_for(h, t, enqueue(t, s), operation_kind::staged_upload, {});
    if (window_) [[unlikely]] window_stream_op(h, t, s, operation_kind::memcpy, {});
    apply_access(dst, entry, *s.context);
    return;
  }
  access_entry entry = entry_for(h, t, enqueue(t, s), operation_kind::memcpy, {});
  if (window_) [[unlikely]] window_stream_op(h, t, s, operation_kind::memcpy, {});
  apply_access(src, entry, *s.context);
  apply_access(dst, entry, *s.context);
  if (copy_completes_before_return(r.async, src_kind, dst_kind)) {
    host_action(t);
    host_joins_stream(t, s);
    if (window_) [[unlikely]] copy_returns(h, t, s, operation_kind::memcpy);
  }
}

void engine_impl::on(const record_header& h, const memset_record& r) {
  thread_state& t = thread_of(h);
  stream_state& s = stream_for(h, t, r.stream, operation_kind::memset);
  if (s.destroyed) return;  // Note [Work on a destroyed stream]
  if (s.capturing) {
    ++stats_.accesses_captured;
    return;
  }
  access_entry entry = entry_for(h, t, enqueue(t, s), operation_kind::memset, {});
  if (window_) [[unlikely]] window_stream_op(h, t, s, operation_kind::memset, {});
  apply_access(access{r.dst, access_mode::write}, entry, *s.context);
  if (memset_completes_before_return(r.async, effective_kind(r.dst_kind, r.dst.alloc))) {
    host_action(t);
    host_joins_stream(t, s);
    if (window_) [[unlikely]] copy_returns(h, t, s, operation_kind::memset);
  }
}

}  // namespace streamsan
