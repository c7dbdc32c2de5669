// A caching allocator's blocks (PyTorch's CUDA caching allocator, reported by
// the native operator hook's allocator tracker: docs/pytorch.md).
//
// Note [Caching allocator blocks]
// PyTorch's allocator gets segments from cudaMalloc (seen as any cudaMalloc:
// device memory) and hands out blocks of them, one per tensor storage. The
// engine checks a block as a `cached_block` allocation whose parent is its
// segment (Note [Histories live on root allocations]): the accesses land in
// the segment's history, and a race between a use of a freed block and the
// next block carved from the same bytes names both blocks and gets the
// reuse fix (record_stream, fix_hint.cpp). So:
// - block_allocated (the allocator's ALLOC trace entry) enters a block at
//   its address inside the live allocation that holds it (the segment, or a
//   cuMemMap mapping of expandable segments), for the stream it is
//   allocated on (the stream the allocator caches it for), and logs it with
//   the segment as parent at its offset (Note [Blocks inside segments]);
// - block_freed (FREE_COMPLETED: the block is back in the pool, after the
//   events of record_stream have completed) frees it with free_mode::cached:
//   no check; the next block over the same bytes is checked against the
//   history instead. The allocator's FREE_REQUESTED is not a free: a block
//   with record_stream uses stays out of the pool until its events say the
//   other streams are done, and the allocator's cudaEventRecord and
//   cudaEventQuery calls (seen like any) order the host after that work
//   before FREE_COMPLETED comes. Correct code gets no report this way, with
//   nothing of torch's policy copied into the model.
// A block freed inside an operator (a composite operator's temporary) leaves
// the spans the operator's later launches take (cuda_model_ops.cpp), else
// they would name a freed block: a use after free that never was.
// Counted, never guessed: a block outside any allocation we saw (a segment
// made before the session), and a free of a block we did not see allocated
// (allocated before the tracker was attached) are left out (STREAMSAN_DEBUG
// prints the counts).
// Note [Blocks unseen while the subscription is dropped]
// A benchmark that drops the Sanitizer API subscription between blocks of
// iterations (Note [The subscription dropped for a benchmark] in
// sanitizer_source.cpp) times streamsan's whole price inside one process:
// its "off" blocks should run as the program runs without streamsan. The
// caching allocator's tracker is torch's and stays attached (torch cannot
// detach it), so its calls kept coming in those blocks: about 19 blocks
// allocated and 19 freed an MLP step. With the operator hook off, each of
// those blocks was handed out outside any operator, so each took a full
// unwind (Note [A block's stack is its operator's] in torch_entry.cpp).
// On an H200 the off blocks of processes with the hook ran 1.19 times as
// long as native processes (median of 5 rounds). Those of the generic
// capture ran 0.98 times as long. The in-process ratio was therefore too
// low (docs/pytorch.md, "The off blocks checked"). Now, while the
// subscription is dropped, the blocks go unseen as every CUDA call does:
// the library's entry returns before it unwinds, and the model ignores
// them. What the tracker costs torch itself (the trace entry and the call
// into the hook) stays in both kinds of block. As with the calls of an
// off block, the model then misses its blocks: a block allocated there
// and freed later is an unknown free, and its accesses land on the
// segment. A benchmark's single stream cannot raise a report from that.
#include <algorithm>

#include "inject/model/cuda_model.h"

namespace streamsan::injection {

void cuda_model::block_allocated(const call_site& at, std::uint64_t address, std::uint64_t size,
                                 std::int32_t device, stream_arg s) {
  if (blocks_unseen()) return;
  const stream_ref on = prepare(s);
  model_lock lock(mutex_);
  // First: it may let go of the lock (Note [No driver calls under the
  // model's lock]).
  const stream_id stream = resolve_stream(lock, at, on);
  const allocation* segment = allocations_.find_live_segment(address);
  if (segment == nullptr) {
    ++blocks_.outside_segments;
    return;
  }
  const std::uint64_t offset = address - segment->base;
  const std::uint64_t room = segment->size > offset ? segment->size - offset : 0;
  const std::uint64_t bytes = std::min(size, room);
  const alloc_id id = rec_.new_alloc_id();
  const alloc_id parent = segment->id;
  allocations_.insert_block(allocation{id, address, bytes, memory_kind::cached_block, device});
  block_places_.set(id, block_place{parent, offset});
  ++blocks_.allocated;
  op_block_allocated_locked(id, bytes);
  alloc_record r;
  r.alloc = id;
  r.kind = memory_kind::cached_block;
  r.device = device;
  r.size = bytes;
  r.address = address;
  r.stream = stream;
  r.parent = parent;
  r.parent_offset = offset;
  emit(at, r);
}

void cuda_model::block_freed(const call_site& at, std::uint64_t address) {
  if (blocks_unseen()) return;
  std::lock_guard lock(mutex_);
  const auto block = allocations_.erase_block(address);
  if (!block) {
    ++blocks_.unknown_frees;
    return;
  }
  ++blocks_.freed;
  block_places_.erase(block->id);
  op_block_freed_locked(block->id);
  emit(at, free_record{block->id, free_mode::cached, {}});
}

// Note [Graphs name segments, not blocks]
// A graph's nodes are described once, at instantiation (or an exec edit),
// and their accesses apply at every launch. A block live then may be freed
// before a later launch while the graph still owns the bytes (torch keeps a
// captured graph's private pool for the graph, and a tensor of it may die
// between replays), so a node naming the block would be a use after free at
// that launch. Graph nodes name the block's segment instead, at the block's
// offset there: the same bytes of the same history, as before blocks were
// tracked.
void cuda_model::accesses_to_segments_locked(std::vector<access>& accesses) const {
  if (block_places_.empty()) return;
  for (auto& a : accesses) {
    const block_place* place = block_places_.find(a.range.alloc);
    if (place == nullptr) continue;
    a.range.alloc = place->segment;
    a.range.offset += place->offset;
  }
}

block_counters cuda_model::block_statistics() const {
  std::lock_guard lock(mutex_);
  return blocks_;
}

}  // namespace streamsan::injection
