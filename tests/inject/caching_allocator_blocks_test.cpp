// Note [Caching allocator blocks]: PyTorch's caching allocator's blocks, as
// the operator hook's allocator tracker reports them (ALLOC, FREE_COMPLETED),
// through the model into the real engine. The allocator's own calls are
// played as torch makes them: record_stream is a cudaEventRecord on the
// stream that used the block when the tensor dies, and FREE_COMPLETED comes
// only once the allocator's cudaEventQuery said the event completed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sanitizer/report/fix_hint.h"
#include "tests/inject/model_fixture.h"

namespace streamsan::injection {
namespace caching_allocator_blocks_test {  // Note [Unity test programs in the sanitizer passes]
namespace {

constexpr std::uintptr_t stream_a = 0x51, stream_b = 0x52;  // torch's streams
constexpr std::uintptr_t event = 0xe1;                       // record_stream's event
constexpr std::uintptr_t kernel = 0xabc;                     // k(float*)
constexpr std::uint64_t segment = 0x7f0000000000;            // a 2 MiB small-pool segment
constexpr std::uint64_t block_bytes = 1024;

class CachingAllocatorBlocks : public model_fixture {
 protected:
  void SetUp() override {
    model_fixture::SetUp();
    driver.kernels[kernel] = kernel_description{"_Z1kPf", {{0, 8}}, true};
    model.stream_created(here, stream_a, 0, 0);
    model.stream_created(here, stream_b, 0, 0);
    model.event_created(here, event, 0);
    model.allocated(here, segment, 2 << 20, memory_kind::device);  // cudaMalloc
  }
  // An operator on `stream` whose one tensor is `bytes` at `address`,
  // accessed in `mode`; its kernel takes the tensor's pointer.
  void op(std::uintptr_t stream, std::uint64_t address, access_mode mode) {
    const annotated_range spans[] = {{address, block_bytes, mode}};
    model.op_began(spans, op_outputs::none);
    model.kernel_launched(here, {stream}, kernel, args(address));
    model.op_ended({});
  }
  // B's work is ordered after A's so far (b.wait_stream(a)).
  void b_waits_for_a() {
    model.event_recorded(here, 0xe2, {stream_a});
    model.stream_waited_event(here, {stream_b}, 0xe2);
  }
  // x on A, written there, then read on B: the side-stream consumer.
  alloc_id tensor_used_on_b() {
    model.block_allocated(here, segment, block_bytes, 0, {stream_a});
    const alloc_id x = sink.all<alloc_record>().back().alloc;
    op(stream_a, segment, access_mode::write);
    b_waits_for_a();
    op(stream_b, segment, access_mode::read);
    return x;
  }
  // Instantiates `exec` from a graph of one kernel node over `address`.
  void instantiate_graph_over(std::uintptr_t exec, std::uint64_t address) {
    constexpr std::uintptr_t graph = 0x6001;
    raw_graph g;
    raw_graph_node n;
    n.kind = raw_node_kind::kernel;
    n.kernel = kernel;
    n.args = args(address);
    g.nodes = {n};
    driver.graphs[graph] = g;
    model.graph_instantiated(here, exec, graph);
  }
};

TEST_F(CachingAllocatorBlocks, ABlockIsACachedBlockOfItsSegment) {
  model.block_allocated(here, segment + 4096, block_bytes, 0, {stream_b});
  const auto block = sink.all<alloc_record>().back();
  const auto seg = sink.all<alloc_record>().front();
  EXPECT_EQ(block.kind, memory_kind::cached_block);
  EXPECT_EQ(block.parent, seg.alloc);
  EXPECT_EQ(block.parent_offset, 4096u);
  EXPECT_EQ(block.size, block_bytes);
  EXPECT_EQ(block.address, segment + 4096);
  EXPECT_FALSE(is_none(block.stream));
  // An operator's span inside it names the block (Note [Operators narrow
  // kernel footprints]).
  op(stream_b, segment + 4096, access_mode::write);
  const auto accesses = sink.last<kernel_launch>().accesses;
  ASSERT_EQ(accesses.size(), 1u);
  EXPECT_EQ(accesses[0].range.alloc, block.alloc);
  EXPECT_EQ(accesses[0].range.offset, 0u);
  model.block_freed(here, segment + 4096);
  EXPECT_EQ(sink.all<free_record>().back().alloc, block.alloc);
  EXPECT_EQ(sink.all<free_record>().back().mode, free_mode::cached);
  EXPECT_TRUE(eng.diagnostics().empty());
}

TEST_F(CachingAllocatorBlocks, ABlockReusedWithoutRecordStreamIsReportedWithTheFix) {
  const alloc_id x = tensor_used_on_b();
  // del x: no record_stream, so the block is back in A's pool at once, and
  // the next tensor on A gets the same bytes while B may still read them.
  model.block_freed(here, segment);
  model.block_allocated(here, segment, block_bytes, 0, {stream_a});
  const alloc_id y = sink.all<alloc_record>().back().alloc;
  op(stream_a, segment, access_mode::write);
  ASSERT_EQ(kinds(), std::vector<std::string>{"stream-race"});
  const diagnostic& d = eng.diagnostics()[0];
  EXPECT_EQ(d.current.alloc, y);
  EXPECT_EQ(d.previous->alloc, x);
  EXPECT_EQ(d.overlap_size, block_bytes);
  const std::string fix = fix_hint(d, sink.tables, fix_vocabulary::runtime);
  EXPECT_EQ(fix, "tell the allocator " + to_string(x) + " is used on " +
                     to_string(d.previous->stream) + ": `record_stream(" +
                     to_string(d.previous->stream) +
                     ")` before freeing it, so that it is not handed out again before k(float*) "
                     "is done")
      << fix;
}

TEST_F(CachingAllocatorBlocks, RecordStreamAsTorchDoesItIsClean) {
  tensor_used_on_b();
  // x.record_stream(b); del x: the allocator records an event on B ...
  model.event_recorded(here, event, {stream_b});
  // ... and at a later allocation polls it; the block returns to the pool
  // only once the query says it completed.
  model.event_queried(here, event, false);
  model.event_queried(here, event, true);
  model.block_freed(here, segment);
  model.block_allocated(here, segment, block_bytes, 0, {stream_a});
  op(stream_a, segment, access_mode::write);
  EXPECT_TRUE(eng.diagnostics().empty()) << kinds().front();
}

TEST_F(CachingAllocatorBlocks, ReuseOnTheSameStreamIsClean) {
  model.block_allocated(here, segment, block_bytes, 0, {stream_a});
  op(stream_a, segment, access_mode::write);
  model.block_freed(here, segment);
  model.block_allocated(here, segment + 512, block_bytes, 0, {stream_a});
  op(stream_a, segment + 512, access_mode::write);
  EXPECT_TRUE(eng.diagnostics().empty());
}

// A composite operator: its inner operator returns a temporary, which dies
// before the operator's next kernel. That kernel takes the operator's spans
// (Note [Operators narrow kernel footprints]) without the freed block.
TEST_F(CachingAllocatorBlocks, ATemporaryFreedInsideAnOperatorLeavesItsSpans) {
  model.block_allocated(here, segment, block_bytes, 0, {stream_a});
  const annotated_range input[] = {{segment, block_bytes, access_mode::read}};
  model.op_began(input, op_outputs::none);
  model.op_began({}, op_outputs::named_at_end);  // the inner operator, returning a new tensor
  model.block_allocated(here, segment + 4096, block_bytes, 0, {stream_a});
  const alloc_id temporary = sink.all<alloc_record>().back().alloc;
  model.kernel_launched(here, {stream_a}, kernel, args(segment + 4096));
  const annotated_range output[] = {{segment + 4096, block_bytes, access_mode::write}};
  model.op_ended(output);
  model.block_freed(here, segment + 4096);
  model.kernel_launched(here, {stream_a}, kernel, args(segment));
  model.op_ended({});
  for (const auto& a : sink.last<kernel_launch>().accesses) EXPECT_NE(a.range.alloc, temporary);
  EXPECT_TRUE(eng.diagnostics().empty()) << kinds().front();
}

// Note [Graphs name segments, not blocks]: a captured graph's node keeps
// its bytes across replays, while the tensor it was captured with may die
// between them (torch keeps the graph's private pool for the graph).
TEST_F(CachingAllocatorBlocks, AGraphNodeNamesTheSegmentSoALaterReplayIsNoUseAfterFree) {
  constexpr std::uintptr_t exec = 0x6002;
  model.block_allocated(here, segment + 8192, block_bytes, 0, {stream_a});
  instantiate_graph_over(exec, segment + 8192);
  const auto& instantiated = sink.last<graph_instantiate>();
  ASSERT_EQ(instantiated.node_accesses.size(), 1u);
  ASSERT_EQ(instantiated.node_accesses[0].size(), 1u);
  const access& a = instantiated.node_accesses[0][0];
  EXPECT_EQ(a.range.alloc, sink.all<alloc_record>().front().alloc);  // the segment
  EXPECT_EQ(a.range.offset, 8192u);
  EXPECT_EQ(a.range.size, block_bytes);  // the block's bytes only
  model.block_freed(here, segment + 8192);
  model.graph_launched(here, exec, {stream_a});
  EXPECT_TRUE(eng.diagnostics().empty()) << kinds().front();
}

// Note [Flat tables by id]: a block freed and carved again at the same
// address is a new block (a fresh id), and only it is placed in the
// segment: a graph node over it names the segment with the new block's
// bytes.
TEST_F(CachingAllocatorBlocks, ABlockCarvedAgainAtItsAddressIsANewBlock) {
  for (int i = 0; i < 100; ++i) {
    model.block_allocated(here, segment + 8192, block_bytes, 0, {stream_a});
    model.block_freed(here, segment + 8192);
  }
  model.block_allocated(here, segment + 8192, block_bytes / 2, 0, {stream_a});
  const auto allocs = sink.all<alloc_record>();
  ASSERT_GE(allocs.size(), 3u);
  EXPECT_NE(allocs[allocs.size() - 1].alloc, allocs[allocs.size() - 2].alloc);
  instantiate_graph_over(0x6002, segment + 8192);
  const access& a = sink.last<graph_instantiate>().node_accesses.at(0).at(0);
  EXPECT_EQ(a.range.alloc, allocs.front().alloc);  // the segment
  EXPECT_EQ(a.range.offset, 8192u);
  EXPECT_EQ(a.range.size, block_bytes / 2);  // the new block's bytes
  const auto counts = model.block_statistics();
  EXPECT_EQ(counts.allocated, 101u);
  EXPECT_EQ(counts.freed, 100u);
}

TEST_F(CachingAllocatorBlocks, WhatWasNotSeenIsCountedAndLeftOut) {
  model.block_freed(here, segment + 8192);  // allocated before the tracker
  model.block_allocated(here, 0x10000, block_bytes, 0, {stream_a});  // in no segment
  const auto counts = model.block_statistics();
  EXPECT_EQ(counts.unknown_frees, 1u);
  EXPECT_EQ(counts.outside_segments, 1u);
  EXPECT_EQ(counts.allocated, 0u);
  EXPECT_TRUE(sink.all<free_record>().empty());
  EXPECT_EQ(sink.all<alloc_record>().size(), 1u);  // the segment only
}

TEST_F(CachingAllocatorBlocks, BlocksGoUnseenWhileABenchmarkDroppedTheSubscription) {
  // Note [Blocks unseen while the subscription is dropped]
  model.block_allocated(here, segment, block_bytes, 0, {stream_a});
  model.set_blocks_unseen(true);
  model.block_freed(here, segment);                                    // unseen
  model.block_allocated(here, segment + 4096, block_bytes, 0, {stream_a});  // unseen
  model.set_blocks_unseen(false);
  model.block_freed(here, segment + 4096);  // allocated unseen: unknown
  model.block_freed(here, segment);         // still live in the model
  const auto counts = model.block_statistics();
  EXPECT_EQ(counts.allocated, 1u);
  EXPECT_EQ(counts.freed, 1u);
  EXPECT_EQ(counts.unknown_frees, 1u);
  EXPECT_EQ(sink.all<alloc_record>().size(), 2u);  // the segment and the first block
  EXPECT_EQ(sink.all<free_record>().size(), 1u);
}

}  // namespace
}  // namespace caching_allocator_blocks_test
}  // namespace streamsan::injection
