// Virtual memory management, IPC handles and external semaphores, through
// the model and the real engine (Notes [Virtual memory management], [IPC
// memory handles], [IPC events], [External semaphores]).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/inject/model_fixture.h"

namespace streamsan::injection {
namespace {

constexpr std::uintptr_t writer = 0xabc;  // k(float*)
constexpr std::uint64_t va = 0x7f0000000000, va2 = 0x7f0000100000;
constexpr std::uint64_t other = 0x10000, scratch = 0x20000;  // cudaMalloc'd
constexpr std::uint64_t handle = 0x1234, handle2 = 0x5678;
constexpr std::uint64_t size = 1 << 16;
constexpr std::uintptr_t s1 = 0x51, s2 = 0x52;

class Vmm : public model_fixture {
 protected:
  void SetUp() override {
    model_fixture::SetUp();
    driver.kernels[writer] = kernel_description{"_Z1kPf", {{0, 8}}, true};
    model.allocated(here, other, size, memory_kind::device);
    model.allocated(here, scratch, size, memory_kind::device);
    model.stream_created(here, s1, 1, 0);
    model.stream_created(here, s2, 1, 0);
  }

  void write_on(std::uintptr_t stream, std::uint64_t pointer) {
    model.kernel_launched(here, {stream}, writer, args(pointer));
  }
  // A copy on `stream` that reads `address`: exact on both sides.
  void read_on(std::uintptr_t stream, std::uint64_t address, std::uint64_t bytes = 64) {
    model.copied(here, {stream}, {scratch, bytes, memory_side::device},
                 {address, bytes, memory_side::device}, true);
  }
  void create_and_map(std::uint64_t h, std::uint64_t at, std::uint64_t offset = 0) {
    model.physical_created(here, h, size, memory_kind::device, 0);
    model.mapped(here, at, size - offset, offset, h);
  }
  void order(std::uintptr_t from, std::uintptr_t to) {
    model.event_created(here, 0xe1, 2);
    model.event_recorded(here, 0xe1, {from});
    model.stream_waited_event(here, {to}, 0xe1);
  }
  std::size_t frees_of(alloc_id id) const {
    std::size_t n = 0;
    for (const auto& f : sink.all<free_record>()) n += f.alloc == id;
    return n;
  }
  alloc_id mapping_at(std::uint64_t address) const {
    for (const auto& r : sink.all<alloc_record>()) {
      if (r.address == address && r.kind == memory_kind::cached_block) return r.alloc;
    }
    return {};
  }
};

using strings = std::vector<std::string>;

TEST_F(Vmm, AMappingIsABlockOfItsPhysicalMemoryAtItsOffset) {
  model.physical_created(here, handle, size, memory_kind::device, 3);
  model.mapped(here, va, 4096, 8192, handle);
  const auto records = sink.all<alloc_record>();
  const auto& root = records.at(records.size() - 2);
  const auto& block = records.back();
  EXPECT_EQ(root.size, size);
  EXPECT_EQ(root.device, 3);
  EXPECT_EQ(root.kind, memory_kind::device);
  EXPECT_EQ(block.kind, memory_kind::cached_block);
  EXPECT_EQ(block.parent, root.alloc);
  EXPECT_EQ(block.parent_offset, 8192u);
  EXPECT_EQ(block.address, va);
  EXPECT_EQ(block.size, 4096u);
  EXPECT_EQ(block.device, 3);
  EXPECT_EQ(sink.tables.string(block.label), "cuMemMap");
  // A kernel's pointer into the mapping resolves to it, to its end.
  write_on(s1, va + 16);
  const auto& k = sink.last<kernel_launch>();
  ASSERT_EQ(k.accesses.size(), 1u);
  EXPECT_EQ(k.accesses[0].range.alloc, block.alloc);
  EXPECT_EQ(k.accesses[0].range.offset, 16u);
  EXPECT_EQ(k.accesses[0].range.size, 4096u - 16);
}

TEST_F(Vmm, UnorderedAccessesOfAMappingRace) {
  create_and_map(handle, va);
  write_on(s1, va);
  read_on(s2, va);
  EXPECT_EQ(kinds(), strings{"stream-race"});
}

TEST_F(Vmm, TwoMappingsOfOnePhysicalAllocationShareItsBytes) {
  create_and_map(handle, va);
  model.mapped(here, va2, size, 0, handle);  // the same memory again
  write_on(s1, va);
  order(s1, s2);
  read_on(s2, va2);
  EXPECT_EQ(kinds(), strings{});
  write_on(s1, va2 + 128);
  read_on(s2, va + 128);  // the same bytes through the other view
  EXPECT_EQ(kinds(), strings{"stream-race"});
}

TEST_F(Vmm, MappingsOfDifferentOffsetsOverlapOnlyWhereTheyShareBytes) {
  model.physical_created(here, handle, size, memory_kind::device, 0);
  model.mapped(here, va, 4096, 0, handle);
  model.mapped(here, va2, 4096, 4096, handle);
  model.memset(here, {s1}, {va, 4096, memory_side::device}, true);
  read_on(s2, va2, 4096);  // bytes [4096, 8192) of the memory: disjoint
  EXPECT_EQ(kinds(), strings{});
}

TEST_F(Vmm, AnUnmapWhileAKernelUsesTheMappingIsAFreeWhileInUse) {
  create_and_map(handle, va);
  write_on(s1, va);
  model.unmapped(here, va, size);
  EXPECT_EQ(kinds(), strings{"free-while-in-use"});
}

TEST_F(Vmm, AnUnmapAfterASynchronizeIsClean) {
  create_and_map(handle, va);
  write_on(s1, va);
  model.stream_synchronized(here, {s1});
  model.unmapped(here, va, size);
  model.physical_released(here, handle);
  EXPECT_EQ(kinds(), strings{});
  EXPECT_EQ(model.live_allocations(), 2u);  // `other` and `scratch`
}

TEST_F(Vmm, AnAccessAfterTheUnmapIsAUseAfterFree) {
  create_and_map(handle, va);
  model.device_synchronized(here);
  model.unmapped(here, va, size);
  write_on(s1, va);
  EXPECT_EQ(kinds(), strings{"use-after-free"});
}

TEST_F(Vmm, ReleasingTheHandleKeepsMappedMemoryAlive) {
  create_and_map(handle, va);
  const alloc_id root = sink.all<alloc_record>().at(sink.all<alloc_record>().size() - 2).alloc;
  model.physical_released(here, handle);
  EXPECT_EQ(frees_of(root), 0u);
  write_on(s1, va);
  model.stream_synchronized(here, {s1});
  EXPECT_EQ(kinds(), strings{});
  // The last unmap frees the physical memory too, checking nothing twice.
  model.unmapped(here, va, size);
  EXPECT_EQ(frees_of(root), 1u);
  EXPECT_EQ(sink.all<free_record>().back().mode, free_mode::cached);
  EXPECT_EQ(kinds(), strings{});
}

TEST_F(Vmm, ARetainedHandleIsOneMoreReference) {
  create_and_map(handle, va);
  const alloc_id root = sink.all<alloc_record>().at(sink.all<alloc_record>().size() - 2).alloc;
  model.physical_retained(here, handle2, va + 100);
  model.physical_released(here, handle);
  model.device_synchronized(here);
  model.unmapped(here, va, size);
  EXPECT_EQ(frees_of(root), 0u);  // handle2 still holds it
  model.physical_released(here, handle2);
  EXPECT_EQ(frees_of(root), 1u);
  // A retain of an address not mapped does nothing.
  model.physical_retained(here, handle2, va);
  model.physical_released(here, handle2);
  EXPECT_EQ(frees_of(root), 1u);
}

TEST_F(Vmm, AHandleNotSeenMadeGetsItsMemoryAtItsFirstMap) {
  model.mapped(here, va, 4096, 4096, handle);  // imported, say
  const auto records = sink.all<alloc_record>();
  ASSERT_GE(records.size(), 2u);
  EXPECT_EQ(records.back().parent, records.at(records.size() - 2).alloc);
  EXPECT_EQ(records.at(records.size() - 2).size, 8192u);
  write_on(s1, va);
  read_on(s2, va);
  EXPECT_EQ(kinds(), strings{"stream-race"});
  EXPECT_TRUE(unmodelled().empty());
}

TEST_F(Vmm, FreeingTheReservationEndsTheMappingsLeftInIt) {
  create_and_map(handle, va);
  model.mapped(here, va + size, size, 0, handle);
  const alloc_id first = mapping_at(va), second = mapping_at(va + size);
  model.device_synchronized(here);
  model.unmapped(here, va, 2 * size);  // cuMemAddressFree of the reservation
  EXPECT_EQ(frees_of(first), 1u);
  EXPECT_EQ(frees_of(second), 1u);
  EXPECT_EQ(kinds(), strings{});
  model.unmapped(here, va, 2 * size);  // nothing left: nothing again
  EXPECT_EQ(frees_of(first), 1u);
}

TEST_F(Vmm, AMapOverAMappingWhoseUnmapWasNotSeenEndsItUnchecked) {
  create_and_map(handle, va);
  const alloc_id old = mapping_at(va);
  write_on(s1, va);
  create_and_map(handle2, va);
  EXPECT_EQ(frees_of(old), 1u);
  EXPECT_EQ(sink.all<free_record>().back().mode, free_mode::cached);
  EXPECT_EQ(kinds(), strings{});
  EXPECT_NE(mapping_at(va), alloc_id{});
}

TEST_F(Vmm, PinnedHostPhysicalMemoryIsOfThatKind) {
  model.physical_created(here, handle, size, memory_kind::pinned_host, std::nullopt);
  const auto records = sink.all<alloc_record>();
  EXPECT_EQ(records.back().kind, memory_kind::pinned_host);
}

// Note [IPC memory handles]
TEST_F(Vmm, AnOpenedIpcHandleIsAnAllocationUntilItsLastClose) {
  driver.ranges[va] = size;
  model.ipc_memory_opened(here, va, "cudaIpcOpenMemHandle");
  model.ipc_memory_opened(here, va, "cudaIpcOpenMemHandle");  // opened again: the same memory
  const auto opened = sink.all<alloc_record>();
  EXPECT_EQ(opened.back().address, va);
  EXPECT_EQ(opened.back().size, size);
  const alloc_id id = opened.back().alloc;
  EXPECT_EQ(std::count_if(opened.begin(), opened.end(),
                          [](const alloc_record& r) { return r.address == va; }),
            1);
  write_on(s1, va);
  model.ipc_memory_closed(here, va);
  EXPECT_EQ(frees_of(id), 0u);
  EXPECT_EQ(kinds(), strings{});
  model.ipc_memory_closed(here, va);  // the last close, while the kernel runs
  EXPECT_EQ(frees_of(id), 1u);
  EXPECT_EQ(kinds(), strings{"free-while-in-use"});
}

TEST_F(Vmm, AnIpcHandleWhoseExtentIsUnknownIsListed) {
  model.ipc_memory_opened(here, va, "cudaIpcOpenMemHandle");
  EXPECT_EQ(unmodelled(), strings{"cudaIpcOpenMemHandle (extent unknown)"});
  model.ipc_memory_closed(here, va);
  EXPECT_TRUE(sink.all<free_record>().empty());
}

// Note [IPC events]
TEST_F(Vmm, AWaitOnAnIpcEventIsNoErrorAndOrdersNothing) {
  model.ipc_event_opened(here, 0xe7);
  model.memset(here, {s1}, {other, 64, memory_side::device}, true);
  model.stream_waited_event(here, {s2}, 0xe7);
  model.event_synchronized(here, 0xe7);
  EXPECT_EQ(kinds(), strings{});  // no unrecorded-event
  read_on(s2, other);
  EXPECT_EQ(kinds(), strings{"stream-race"});  // the wait ordered nothing of s1's
}

TEST_F(Vmm, ARecordInThisProcessReplacesTheOtherProcesses) {
  model.event_created(here, 0xe8, 0x4 | 0x2);  // interprocess, no timing
  model.memset(here, {s1}, {other, 64, memory_side::device}, true);
  model.stream_waited_event(here, {s2}, 0xe8);
  EXPECT_EQ(kinds(), strings{});
  model.event_recorded(here, 0xe8, {s1});
  model.stream_waited_event(here, {s2}, 0xe8);
  read_on(s2, other);
  EXPECT_EQ(kinds(), strings{});
}

// Note [External semaphores]
using ExternalSemaphores = Vmm;

TEST_F(ExternalSemaphores, AWaitIsOrderedAfterTheWorkBeforeASignal) {
  model.memset(here, {s1}, {other, 64, memory_side::device}, true);
  model.semaphores_signalled(here, {s1});
  model.semaphores_waited(here, {s2});
  read_on(s2, other);
  EXPECT_EQ(kinds(), strings{});
  EXPECT_TRUE(unmodelled().empty());
}

TEST_F(ExternalSemaphores, WorkAfterTheSignalIsNotCovered) {
  model.semaphores_signalled(here, {s1});
  model.memset(here, {s1}, {other, 64, memory_side::device}, true);
  model.semaphores_waited(here, {s2});
  read_on(s2, other);
  EXPECT_EQ(kinds(), strings{"stream-race"});
}

TEST_F(ExternalSemaphores, AWaitWithNoSignalBeforeItOrdersNothingAndIsNoError) {
  model.memset(here, {s1}, {other, 64, memory_side::device}, true);
  model.semaphores_waited(here, {s2});  // signalled from outside
  read_on(s2, other);
  EXPECT_EQ(kinds(), strings{"stream-race"});
  EXPECT_TRUE(unmodelled().empty());
  EXPECT_TRUE(sink.all<event_wait>().empty());
}

// Signal A on s1, the other API waits for A and signals B, s2 waits for B:
// s2 is after s1's work, though no signal of B was seen.
TEST_F(ExternalSemaphores, AWaitForAnOutsideSignalIsAfterEverySignalBeforeIt) {
  constexpr std::uintptr_t s3 = 0x53;
  model.stream_created(here, s3, 1, 0);
  model.memset(here, {s1}, {other, 64, memory_side::device}, true);
  model.semaphores_signalled(here, {s1});
  model.memset(here, {s3}, {va2, 64, memory_side::device}, true);  // untracked
  model.semaphores_signalled(here, {s3});
  model.semaphores_waited(here, {s2});
  read_on(s2, other);
  EXPECT_EQ(kinds(), strings{});
}

TEST_F(ExternalSemaphores, ADestroyedSignallersWorkStaysCovered) {
  model.memset(here, {s1}, {other, 64, memory_side::device}, true);
  model.semaphores_signalled(here, {s1});
  const event_id handoff = sink.all<event_record>().at(0).event;
  model.stream_destroyed(here, s1);
  const auto destroyed = sink.all<event_destroy>();
  ASSERT_EQ(destroyed.size(), 1u);
  EXPECT_EQ(destroyed[0].event, handoff);
  model.semaphores_waited(here, {s2});
  read_on(s2, other);
  EXPECT_EQ(kinds(), strings{});
}

TEST_F(ExternalSemaphores, SignalsAndWaitsOnACapturingStreamAreGraphNodes) {
  model.capture_began(here, {s1});
  const auto before = sink.records.size();
  model.semaphores_signalled(here, {s1});
  model.semaphores_waited(here, {s1});
  EXPECT_EQ(sink.records.size(), before);
}

}  // namespace
}  // namespace streamsan::injection
