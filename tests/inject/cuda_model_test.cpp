#include "inject/model/cuda_model.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>
#include <variant>
#include <vector>

#include "tests/inject/capture_sink.h"
#include "tests/inject/fake_driver.h"

namespace streamsan::injection {
namespace {

class CudaModel : public ::testing::Test {
 protected:
  recorder rec{{.capture_stacks = true, .stack_depth = 4}};
  fake_driver driver;
  capture_sink sink;
  cuda_model model{rec, driver};
  call_site here{};

  void SetUp() override { rec.add_sink(sink); }
};

constexpr std::uintptr_t stream_a = 0x5000;
constexpr std::uintptr_t stream_b = 0x6000;

TEST_F(CudaModel, RecycledStreamHandleIsANewStream) {
  model.stream_created(here, stream_a, 0, 0);
  model.stream_synchronized(here, {stream_a});
  model.stream_destroyed(here, stream_a);
  model.stream_synchronized(here, {stream_a});  // use after destroy
  model.stream_created(here, stream_a, 1, -1);  // the driver recycles the handle
  model.stream_synchronized(here, {stream_a});
  const auto creates = sink.all<stream_create>();
  ASSERT_EQ(creates.size(), 2u);
  EXPECT_NE(creates[0].stream, creates[1].stream);
  EXPECT_EQ(creates[0].flavor, stream_flavor::blocking);
  EXPECT_EQ(creates[1].flavor, stream_flavor::non_blocking);
  EXPECT_EQ(creates[1].priority, -1);
  const auto syncs = sink.all<stream_synchronize>();
  ASSERT_EQ(syncs.size(), 3u);
  EXPECT_EQ(syncs[0].stream, creates[0].stream);
  EXPECT_EQ(syncs[1].stream, creates[0].stream);  // attributed to the destroyed one
  EXPECT_EQ(syncs[2].stream, creates[1].stream);
  EXPECT_EQ(sink.all<stream_destroy>().at(0).stream, creates[0].stream);
}

TEST_F(CudaModel, NullStreamIsLegacyUnlessPerThreadVariant) {
  model.stream_synchronized(here, {0, false});
  model.stream_synchronized(here, {legacy_stream_handle, false});
  model.stream_synchronized(here, {0, true});
  model.stream_synchronized(here, {per_thread_stream_handle, false});
  std::thread([&] { model.stream_synchronized(here, {0, true}); }).join();
  driver.device = 1;
  model.stream_synchronized(here, {0, false});
  const auto creates = sink.all<stream_create>();
  ASSERT_EQ(creates.size(), 4u);
  EXPECT_EQ(creates[0].flavor, stream_flavor::legacy_default);
  EXPECT_EQ(creates[1].flavor, stream_flavor::per_thread_default);
  EXPECT_EQ(creates[2].flavor, stream_flavor::per_thread_default);  // the other thread's
  EXPECT_EQ(creates[3].flavor, stream_flavor::legacy_default);
  EXPECT_EQ(creates[3].device, 1);
  const auto syncs = sink.all<stream_synchronize>();
  EXPECT_EQ(syncs[0].stream, syncs[1].stream);
  EXPECT_EQ(syncs[2].stream, syncs[3].stream);
  EXPECT_NE(syncs[0].stream, syncs[2].stream);
  EXPECT_NE(syncs[2].stream, syncs[4].stream);
}

TEST_F(CudaModel, ForeignStreamIsDescribedByTheDriver) {
  driver.foreign_streams[stream_b] = stream_description{0, 1, -2};
  model.stream_queried(here, {stream_b}, true);
  const auto creates = sink.all<stream_create>();
  ASSERT_EQ(creates.size(), 1u);
  EXPECT_EQ(creates[0].flavor, stream_flavor::non_blocking);
  EXPECT_EQ(creates[0].priority, -2);
  EXPECT_TRUE(sink.all<stream_query>().at(0).complete);
}

TEST_F(CudaModel, KernelLaunchInfersAccessesFromTheArguments) {
  driver.kernels[0xabc] = kernel_description{"_Z5scalePKfPfi", {{0, 8}, {8, 8}, {16, 4}}, true};
  model.stream_created(here, stream_a, 0, 0);
  model.allocated(here, 0x10000, 256, memory_kind::device);
  model.allocated(here, 0x20000, 256, memory_kind::device);
  std::uint64_t in = 0x10000, out = 0x20040;
  int n = 3;
  void* params[] = {&in, &out, &n};
  model.kernel_launched(here, {stream_a}, 0xabc, kernel_arguments::from_pointers(params));
  model.kernel_launched(here, {stream_a}, 0xabc, kernel_arguments::from_pointers(params));
  const auto& launch = sink.last<kernel_launch>();
  EXPECT_EQ(sink.tables.string(std::get<kernel_launch>(launch.body).kernel),
            "scale(float const*, float*, int)");
  const auto allocs = sink.all<alloc_record>();
  ASSERT_EQ(launch.accesses.size(), 2u);
  EXPECT_EQ(launch.accesses[0].range.alloc, allocs[0].alloc);
  EXPECT_EQ(launch.accesses[0].mode, access_mode::read);
  EXPECT_EQ(launch.accesses[1].range.alloc, allocs[1].alloc);
  EXPECT_EQ(launch.accesses[1].range.offset, 0x40u);
  EXPECT_EQ(launch.accesses[1].range.size, 256u - 0x40u);
  EXPECT_EQ(launch.accesses[1].mode, access_mode::read_write);
  EXPECT_EQ(driver.kernel_queries, 1);  // cached per kernel
  model.modules_unloaded();
  model.kernel_launched(here, {stream_a}, 0xabc, kernel_arguments::from_pointers(params));
  EXPECT_EQ(driver.kernel_queries, 2);
}

TEST_F(CudaModel, AnnotationReplacesInferenceForTheNextLaunchOnly) {
  driver.kernels[0xabc] = kernel_description{"_Z1kPf", {{0, 8}}, true};
  model.stream_created(here, stream_a, 0, 0);
  model.allocated(here, 0x10000, 1024, memory_kind::device);
  std::uint64_t p = 0x10000;
  void* params[] = {&p};
  const annotated_range exact[] = {{0x10000 + 128, 64, access_mode::write}};
  model.annotate_next_launch({stream_a}, exact);
  model.kernel_launched(here, {stream_a}, 0xabc, kernel_arguments::from_pointers(params));
  const auto first = sink.last<kernel_launch>().accesses;
  model.kernel_launched(here, {stream_a}, 0xabc, kernel_arguments::from_pointers(params));
  const auto second = sink.last<kernel_launch>().accesses;
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].range.offset, 128u);
  EXPECT_EQ(first[0].range.size, 64u);
  EXPECT_EQ(first[0].mode, access_mode::write);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].range.size, 1024u);
  EXPECT_EQ(second[0].mode, access_mode::read_write);
}

TEST_F(CudaModel, FreeOfUnknownMemoryIsIgnoredAndKnownFreeIsRecorded) {
  model.freed(here, 0, free_mode::synchronizing);
  model.freed(here, 0x999, free_mode::synchronizing);
  EXPECT_TRUE(sink.all<free_record>().empty());
  model.stream_created(here, stream_a, 0, 0);
  model.allocated(here, 0x10000, 64, memory_kind::stream_ordered, stream_arg{stream_a});
  model.freed(here, 0x10000, free_mode::stream_ordered, stream_arg{stream_a});
  const auto alloc = sink.all<alloc_record>().at(0);
  const auto free = sink.all<free_record>().at(0);
  EXPECT_EQ(alloc.kind, memory_kind::stream_ordered);
  EXPECT_EQ(alloc.stream, sink.all<stream_create>().at(0).stream);
  EXPECT_EQ(free.alloc, alloc.alloc);
  EXPECT_EQ(free.mode, free_mode::stream_ordered);
  EXPECT_EQ(free.stream, alloc.stream);
  EXPECT_EQ(model.live_allocations(), 0u);
}

TEST_F(CudaModel, CopyResolvesBothSides) {
  model.allocated(here, 0x10000, 100, memory_kind::device);
  model.copied(here, {0}, memory_region{0x10010, 500, memory_side::device},
               memory_region{0x7fff0000, 500, memory_side::host}, false);
  const auto c = sink.all<memcpy_record>().at(0);
  EXPECT_EQ(c.dst.alloc, sink.all<alloc_record>().at(0).alloc);
  EXPECT_EQ(c.dst.offset, 0x10u);
  EXPECT_EQ(c.dst.size, 100u - 0x10u);  // clipped to the allocation
  EXPECT_EQ(c.dst_kind, memory_kind::device);
  EXPECT_TRUE(is_none(c.src.alloc));
  EXPECT_EQ(c.src.size, 500u);
  EXPECT_EQ(c.src_kind, memory_kind::pageable_host);
  EXPECT_FALSE(c.async);
  EXPECT_EQ(sink.all<stream_create>().at(0).flavor, stream_flavor::legacy_default);
}

TEST_F(CudaModel, EventFlagsAndUnseenEvents) {
  model.event_created(here, 0xe1, 0x2 /*disable timing*/);
  model.event_created(here, 0xe2, 0x1 /*blocking sync*/);
  model.event_queried(here, 0xe3, false);  // never seen created
  const auto creates = sink.all<event_create>();
  ASSERT_EQ(creates.size(), 3u);
  EXPECT_EQ(creates[0].flags, event_flag_none);
  EXPECT_EQ(creates[1].flags, event_flag_timing | event_flag_blocking_sync);
  EXPECT_EQ(sink.all<event_query>().at(0).event, creates[2].event);
}

TEST_F(CudaModel, RecordAndWaitNameTheirStreams) {
  model.stream_created(here, stream_a, 0, 0);
  model.stream_created(here, stream_b, 1, 0);
  model.event_created(here, 0xe1, 0);
  model.event_recorded(here, 0xe1, {stream_a});
  model.stream_waited_event(here, {stream_b}, 0xe1);
  model.event_destroyed(here, 0xe1);
  model.event_synchronized(here, 0xe1);
  const auto streams = sink.all<stream_create>();
  const auto rec_ = sink.all<event_record>().at(0);
  const auto wait = sink.all<event_wait>().at(0);
  EXPECT_EQ(rec_.stream, streams[0].stream);
  EXPECT_EQ(wait.stream, streams[1].stream);
  EXPECT_EQ(wait.event, rec_.event);
  EXPECT_EQ(sink.all<event_synchronize>().at(0).event, rec_.event);  // destroyed one
}

TEST_F(CudaModel, GraphInstantiateCarriesNodesAccessesAndEdges) {
  driver.kernels[0xabc] = kernel_description{"_Z1kPKf", {{0, 8}}, true};
  model.allocated(here, 0x10000, 64, memory_kind::device);
  model.allocated(here, 0x20000, 64, memory_kind::device);
  static std::uint64_t p = 0x10000;
  static void* params[] = {&p};
  raw_graph g;
  raw_graph_node k;
  k.kind = raw_node_kind::kernel;
  k.kernel = 0xabc;
  k.args = kernel_arguments::from_pointers(params);
  raw_graph_node m;
  m.kind = raw_node_kind::memset;
  m.dst = memory_region{0x20000, 64, memory_side::device};
  raw_graph_node c;
  c.kind = raw_node_kind::memcpy;
  c.dst = memory_region{0x20000, 32, memory_side::device};
  c.src = memory_region{0x10000, 32, memory_side::device};
  g.nodes = {k, m, c};
  g.edges = {{0, 2}, {1, 2}};
  driver.graphs[0x9000] = g;
  model.graph_instantiated(here, 0x9100, 0x9000);
  model.stream_created(here, stream_a, 0, 0);
  model.graph_launched(here, 0x9100, {stream_a});
  model.graph_exec_destroyed(0x9100);
  model.graph_launched(here, 0x9100, {stream_a});  // the exec is gone
  const auto& inst = sink.last<graph_instantiate>();
  ASSERT_EQ(inst.nodes.size(), 3u);
  EXPECT_EQ(inst.nodes[0].kind, graph_node_kind::kernel);
  EXPECT_EQ(sink.tables.string(inst.nodes[0].name), "k(float const*)");
  ASSERT_EQ(inst.node_accesses[0].size(), 1u);
  EXPECT_EQ(inst.node_accesses[0][0].mode, access_mode::read);
  ASSERT_EQ(inst.node_accesses[1].size(), 1u);
  EXPECT_EQ(inst.node_accesses[1][0].mode, access_mode::write);
  ASSERT_EQ(inst.node_accesses[2].size(), 2u);
  ASSERT_EQ(inst.edges.size(), 2u);
  EXPECT_EQ(inst.edges[1].from, 1u);
  EXPECT_EQ(inst.edges[1].to, 2u);
  const auto launches = sink.all<graph_launch>();
  ASSERT_EQ(launches.size(), 2u);  // destroyed execs keep their id (tombstone)
  EXPECT_EQ(launches[0].graph, std::get<graph_instantiate>(inst.body).graph);
}

TEST_F(CudaModel, UnseenGraphLaunchIsUnmodelled) {
  model.graph_launched(here, 0x7777, {0});
  const auto u = sink.all<unmodelled_call>();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(sink.tables.string(u[0].api), "cudaGraphLaunch (graph instantiated unseen)");
}

TEST_F(CudaModel, CaptureBracketsShareAGraphId) {
  model.stream_created(here, stream_a, 0, 0);
  model.capture_began(here, {stream_a});
  model.capture_ended(here, {stream_a}, 0x9000);
  const auto b = sink.all<graph_capture_begin>().at(0);
  const auto e = sink.all<graph_capture_end>().at(0);
  EXPECT_EQ(b.graph, e.graph);
  EXPECT_EQ(b.stream, e.stream);
  EXPECT_FALSE(is_none(b.graph));
}

TEST_F(CudaModel, HostAccessAnnotationOfUntrackedMemoryEmitsNothing) {
  const annotated_range r[] = {{0x123, 8, access_mode::read}};
  model.host_accessed(here, r, "host read");
  EXPECT_TRUE(sink.all<host_access>().empty());
  model.allocated(here, 0x10000, 64, memory_kind::pinned_host);
  const annotated_range pinned[] = {{0x10008, 8, access_mode::read}};
  model.host_accessed(here, pinned, "host read");
  const auto& h = sink.last<host_access>();
  ASSERT_EQ(h.accesses.size(), 1u);
  EXPECT_EQ(h.accesses[0].range.offset, 8u);
  EXPECT_EQ(sink.tables.string(std::get<host_access>(h.body).what), "host read");
}

TEST_F(CudaModel, CallSiteFramesBecomeTheRecordStack) {
  const std::uint64_t frames[] = {0x401000, 0x402000, 0x403000, 0x404000, 0x405000, 0x406000};
  model.device_synchronized(call_site{frames});
  const auto& r = sink.last<device_synchronize>();
  const auto stack = sink.tables.stack(r.header.stack);
  ASSERT_EQ(stack.size(), 4u);  // the recorder's stack_depth
  EXPECT_EQ(stack[0], 0x401000u);
  EXPECT_EQ(stack[3], 0x404000u);
}

TEST_F(CudaModel, HostFunctionIsNamed) {
  model.host_function_launched(here, {0}, 42);
  EXPECT_EQ(sink.tables.string(sink.all<host_func>().at(0).name), "host_fn_42");
}

}  // namespace
}  // namespace streamsan::injection
