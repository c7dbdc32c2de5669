#include "inject/model/cuda_model.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "tests/inject/capture_sink.h"
#include "tests/inject/fake_driver.h"

namespace streamsan::injection {
namespace {

template <class Driver>
class model_test : public ::testing::Test {
 protected:
  recorder rec{{.capture_stacks = true, .stack_depth = 4}};
  Driver driver;
  capture_sink sink;
  cuda_model model{rec, driver};
  call_site here{};

  void SetUp() override { rec.add_sink(sink); }
};

class CudaModel : public model_test<fake_driver> {};

raw_graph_node kernel_node(std::uintptr_t kernel, void** params) {
  raw_graph_node n;
  n.kind = raw_node_kind::kernel;
  n.kernel = kernel;
  n.args = kernel_arguments::from_pointers(params);
  return n;
}

raw_graph_node copy_node(memory_region dst, memory_region src) {
  raw_graph_node n;
  n.kind = raw_node_kind::memcpy;
  n.dst = dst;
  n.src = src;
  return n;
}

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
  EXPECT_EQ(driver.kernel_queries.load(), 1);  // cached per kernel
  model.modules_unloaded();
  model.kernel_launched(here, {stream_a}, 0xabc, kernel_arguments::from_pointers(params));
  EXPECT_EQ(driver.kernel_queries.load(), 2);
}

// A launch of kernel 0xabc on stream_a with `pointer` as its one argument.
void launch_on_a(cuda_model& model, std::uint64_t pointer) {
  void* params[] = {&pointer};
  model.kernel_launched(call_site{}, {stream_a}, 0xabc, kernel_arguments::from_pointers(params));
}

// Note [Recent handles]: a kernel handle remembered from its launches is
// another kernel once its module is unloaded and the handle handed out again.
TEST_F(CudaModel, ARecycledKernelHandleIsTheNewKernel) {
  driver.kernels[0xabc] = kernel_description{"_Z3oldPf", {{0, 8}}, true};
  model.stream_created(here, stream_a, 0, 0);
  model.allocated(here, 0x10000, 256, memory_kind::device);
  launch_on_a(model, 0x10000);
  launch_on_a(model, 0x10000);
  model.modules_unloaded();
  driver.kernels[0xabc] = kernel_description{"_Z3newPKf", {{0, 8}}, true};
  launch_on_a(model, 0x10000);
  const auto& launch = sink.last<kernel_launch>();
  EXPECT_EQ(sink.tables.string(std::get<kernel_launch>(launch.body).kernel),
            "new(float const*)");
  ASSERT_EQ(launch.accesses.size(), 1u);
  EXPECT_EQ(launch.accesses[0].mode, access_mode::read);
}

// Note [Recent handles]: launches on a stream handle name the stream that
// holds it at each launch: the live one, the destroyed one until the handle
// comes back, the new one after, and, once the destroyed one's tombstone is
// pushed out, the stream the driver describes.
TEST_F(CudaModel, LaunchesOnARecycledStreamHandleNameTheStreamThatHoldsIt) {
  driver.kernels[0xabc] = kernel_description{"_Z1kv", {}, true};
  const auto launch = [&] {
    model.kernel_launched(here, {stream_a}, 0xabc, kernel_arguments{});
    return std::get<kernel_launch>(sink.last<kernel_launch>().body).stream;
  };
  model.stream_created(here, stream_a, 0, 0);
  const stream_id first = launch();
  EXPECT_EQ(launch(), first);
  model.stream_destroyed(here, stream_a);
  EXPECT_EQ(launch(), first);  // use after destroy
  model.stream_created(here, stream_a, 0, 0);
  const stream_id second = launch();
  EXPECT_NE(second, first);
  EXPECT_EQ(launch(), second);
  model.stream_destroyed(here, stream_a);
  for (std::uintptr_t h = 1; h <= 1100; ++h) {  // more than the tombstones kept
    model.stream_created(here, 0x100000 + h * 16, 0, 0);
    model.stream_destroyed(here, 0x100000 + h * 16);
  }
  const stream_id third = launch();
  EXPECT_NE(third, second);
  EXPECT_EQ(third, sink.all<stream_create>().back().stream);
}

// Note [A word's lookup copies three words]: a launch after its buffer was
// freed and the address handed out again names the new allocation.
TEST_F(CudaModel, ALaunchAfterAReallocationAtTheSameAddressNamesTheNewAllocation) {
  driver.kernels[0xabc] = kernel_description{"_Z1kPf", {{0, 8}}, true};
  model.stream_created(here, stream_a, 0, 0);
  model.allocated(here, 0x10000, 1024, memory_kind::device);
  launch_on_a(model, 0x10100);
  model.freed(here, 0x10000, free_mode::synchronizing);
  model.allocated(here, 0x10000, 512, memory_kind::device);
  launch_on_a(model, 0x10100);
  const auto allocs = sink.all<alloc_record>();
  ASSERT_EQ(allocs.size(), 2u);
  const auto& launch = sink.last<kernel_launch>();
  ASSERT_EQ(launch.accesses.size(), 1u);
  EXPECT_EQ(launch.accesses[0].range.alloc, allocs[1].alloc);
  EXPECT_EQ(launch.accesses[0].range.size, 512u - 0x100u);
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
  raw_graph_node m;
  m.kind = raw_node_kind::memset;
  m.dst = memory_region{0x20000, 64, memory_side::device};
  g.nodes = {kernel_node(0xabc, params), m,
             copy_node({0x20000, 32, memory_side::device}, {0x10000, 32, memory_side::device})};
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

// Note [Where graph nodes were made]
TEST_F(CudaModel, GraphNodesCarryTheStackOfTheCallThatAddedThem) {
  const std::uint64_t add_frames[] = {0x401000, 0x402000};
  const call_site add_site{add_frames};
  raw_graph g;
  raw_graph_node added, captured, other_graph;
  added.kind = captured.kind = other_graph.kind = raw_node_kind::empty;
  added.handle = 0xa1;
  captured.handle = 0xa2;
  other_graph.handle = 0xa3;
  g.nodes = {added, captured, other_graph};
  driver.graphs[0x9000] = g;
  model.graph_node_added(add_site, 0xa1, 0x9000);
  model.graph_node_added(add_site, 0xa3, 0x8000);  // a node of another graph
  model.graph_instantiated(here, 0x9100, 0x9000);
  const auto& inst = sink.last<graph_instantiate>();
  ASSERT_EQ(inst.nodes.size(), 3u);
  ASSERT_FALSE(is_none(inst.nodes[0].stack));
  const auto stack = sink.tables.stack(inst.nodes[0].stack);
  ASSERT_EQ(stack.size(), 2u);
  EXPECT_EQ(stack[0], 0x401000u);
  EXPECT_TRUE(is_none(inst.nodes[1].stack));
  EXPECT_TRUE(is_none(inst.nodes[2].stack));
  // Destroying the graph forgets its nodes: a reused handle is not them.
  model.graph_destroyed(0x9000);
  model.graph_instantiated(here, 0x9200, 0x9000);
  EXPECT_TRUE(is_none(sink.last<graph_instantiate>().nodes[0].stack));
}

// Note [Where graph nodes were made]: a captured call's node is the
// capture frontier right after it.
TEST_F(CudaModel, CapturedNodesCarryTheStackOfTheCapturedCall) {
  const std::uint64_t first_frames[] = {0x501000};
  const std::uint64_t second_frames[] = {0x502000};
  const std::uint64_t record_frames[] = {0x503000};
  model.stream_created(here, stream_a, 0, 0);
  model.capture_began(here, {stream_a});
  driver.captures[stream_a] = capture_frontier{0x7000, {0xb1}};
  model.captured_call_returned(call_site{first_frames}, {stream_a});
  driver.captures[stream_a] = capture_frontier{0x7000, {0xb2}};
  model.captured_call_returned(call_site{second_frames}, {stream_a});
  // An event record adds no node: the frontier is still 0xb2.
  model.captured_call_returned(call_site{record_frames}, {stream_a});
  // A stream that joined the capture (by waiting for an event recorded in
  // it: the driver says it captures) names its nodes too.
  const std::uint64_t side_frames[] = {0x504000};
  model.stream_created(here, stream_b, 0, 0);
  driver.captures[stream_b] = capture_frontier{0x7000, {0xb3}};
  model.captured_call_returned(call_site{side_frames}, {stream_b});
  driver.captures.clear();
  // Once nothing captures, nothing is named.
  model.captured_call_returned(call_site{record_frames}, {stream_b});
  model.capture_ended(here, {stream_a}, 0x7000);

  raw_graph g;
  g.nodes.resize(3);
  g.nodes[0].handle = 0xb1;
  g.nodes[1].handle = 0xb2;
  g.nodes[2].handle = 0xb3;
  for (auto& n : g.nodes) n.kind = raw_node_kind::empty;
  driver.graphs[0x7000] = g;
  model.graph_instantiated(here, 0x7100, 0x7000);
  const auto& inst = sink.last<graph_instantiate>();
  ASSERT_EQ(inst.nodes.size(), 3u);
  ASSERT_FALSE(is_none(inst.nodes[0].stack));
  ASSERT_FALSE(is_none(inst.nodes[1].stack));
  EXPECT_EQ(sink.tables.stack(inst.nodes[0].stack)[0], 0x501000u);
  EXPECT_EQ(sink.tables.stack(inst.nodes[1].stack)[0], 0x502000u);
  ASSERT_FALSE(is_none(inst.nodes[2].stack));
  EXPECT_EQ(sink.tables.stack(inst.nodes[2].stack)[0], 0x504000u);
}

// A capture that fails (cudaStreamEndCapture gives no graph) drops the
// nodes it named: their handles may come back in another graph.
TEST_F(CudaModel, AFailedCaptureForgetsItsNodes) {
  const std::uint64_t frames[] = {0x501000};
  model.stream_created(here, stream_a, 0, 0);
  model.capture_began(here, {stream_a});
  driver.captures[stream_a] = capture_frontier{0x7000, {0xb1}};
  model.captured_call_returned(call_site{frames}, {stream_a});
  model.capture_ended(here, {stream_a}, 0);
  raw_graph g;
  g.nodes.resize(1);
  g.nodes[0].handle = 0xb1;
  g.nodes[0].kind = raw_node_kind::empty;
  driver.graphs[0x7000] = g;
  model.graph_instantiated(here, 0x7100, 0x7000);
  EXPECT_TRUE(is_none(sink.last<graph_instantiate>().nodes[0].stack));
}

TEST_F(CudaModel, UnseenGraphLaunchIsUnmodelled) {
  model.graph_launched(here, 0x7777, {0});
  const auto u = sink.all<unmodelled_call>();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(sink.tables.string(u[0].api), "cudaGraphLaunch (graph instantiated unseen)");
}

// A graph the driver would not describe is named with the driver's reason,
// and edits of its exec say that its graph was not readable, not that the
// exec was never seen instantiated (JAX's command buffers, H200).
TEST_F(CudaModel, AnUnreadableGraphSaysWhyAndSoDoItsExecsEdits) {
  driver.graph_failure = "cuGraphGetNodes failed: CUDA_ERROR_INVALID_VALUE (1)";
  model.graph_instantiated(here, 0x7000, 0x6000);
  model.graph_exec_node_set(here, 0x7000, 0x1234, raw_graph_node{},
                            "cuGraphExecKernelNodeSetParams");
  model.graph_exec_node_set(here, 0x7001, 0x1234, raw_graph_node{},
                            "cuGraphExecKernelNodeSetParams");
  driver.graphs[0x6001] = raw_graph{};
  model.graph_exec_updated(here, 0x7000, 0x6001, "cudaGraphExecUpdate");
  const auto u = sink.all<unmodelled_call>();
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(sink.tables.string(u[3].api), "cudaGraphExecUpdate (graph not readable)");
  EXPECT_EQ(sink.tables.string(u[0].api),
            "cudaGraphInstantiate (graph not readable: cuGraphGetNodes failed: "
            "CUDA_ERROR_INVALID_VALUE (1))");
  EXPECT_EQ(sink.tables.string(u[1].api), "cuGraphExecKernelNodeSetParams (graph not readable)");
  EXPECT_EQ(sink.tables.string(u[2].api),
            "cuGraphExecKernelNodeSetParams (graph instantiated unseen)");
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


// Note [A host function that ran orders the host]: at the entry of the
// call, the host function's place is a private event on its stream, and the
// marker the driver runs before the function synchronizes with it on the
// driver's thread.
TEST_F(CudaModel, AHostFunctionsMarkerSynchronizesItsPlaceOnTheDriversThread) {
  model.stream_created(here, stream_a, 0, 0);
  model.host_function_entering({stream_a});
  model.host_function_launched(here, {stream_a}, 42);
  model.host_function_returned(true);
  ASSERT_EQ(driver.host_functions.size(), 1u);
  EXPECT_EQ(driver.host_functions[0].stream, stream_a);
  const auto created = sink.all<event_create>();
  const auto recorded = sink.all<event_record>();
  ASSERT_EQ(created.size(), 1u);
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].event, created[0].event);
  EXPECT_EQ(recorded[0].stream, sink.all<host_func>().at(0).stream);
  EXPECT_LT(sink.last<event_record>().header.seq, sink.last<host_func>().header.seq);
  EXPECT_TRUE(sink.all<event_synchronize>().empty()) << "nothing ran yet";

  std::thread driver_thread([&] { driver.run_host_functions(); });
  driver_thread.join();
  const auto& synced = sink.last<event_synchronize>();
  EXPECT_EQ(std::get<event_synchronize>(synced.body).event, created[0].event);
  EXPECT_NE(synced.header.thread, sink.last<host_func>().header.thread);
  EXPECT_EQ(sink.all<event_destroy>().at(0).event, created[0].event);
}

// Ours goes before the ThreadSanitizer bridge's marker, which leaves the
// driver's thread on the body's fiber (Note [The bridge is invisible to
// TSan]): nothing of ours may run there.
TEST_F(CudaModel, AHostFunctionsMarkerIsEnqueuedBeforeTheListenersOwn) {
  struct listener final : host_function_listener {
    fake_driver* driver = nullptr;
    std::size_t enqueued_before = 0;
    void entering(std::uintptr_t) override { enqueued_before = driver->host_functions.size(); }
    void logged(stream_id) override {}
    void returned(bool) override {}
  } bridge;
  bridge.driver = &driver;
  model.set_host_function_listener(&bridge);
  model.host_function_entering({stream_a});
  EXPECT_EQ(bridge.enqueued_before, 1u);
  model.set_host_function_listener(nullptr);
}

TEST_F(CudaModel, AHostFunctionWhoseMarkerTheDriverRefusedLeavesNoEventBehind) {
  driver.accept_host_functions = false;
  model.host_function_entering({stream_a});
  model.host_function_launched(here, {stream_a}, 42);
  ASSERT_EQ(sink.all<event_create>().size(), 1u);
  EXPECT_EQ(sink.all<event_destroy>().at(0).event, sink.all<event_create>()[0].event);
  EXPECT_TRUE(sink.all<event_synchronize>().empty());
}

// The program's call on a destroyed stream is reported as such (at its
// exit); our marker's records must not report it first, without a stack.
TEST_F(CudaModel, AHostFunctionOnADestroyedStreamGetsNoMarker) {
  model.stream_created(here, stream_a, 0, 0);
  model.stream_destroyed(here, stream_a);
  model.host_function_entering({stream_a});
  EXPECT_TRUE(driver.host_functions.empty());
  EXPECT_TRUE(sink.all<event_create>().empty());
}

TEST_F(CudaModel, AHostFunctionOnACapturingStreamGetsNoMarker) {
  model.stream_created(here, stream_a, 0, 0);
  model.capture_began(here, {stream_a});
  driver.captures[stream_a] = capture_frontier{0x7000, {}};
  model.host_function_entering({stream_a});
  EXPECT_TRUE(driver.host_functions.empty());
  EXPECT_TRUE(sink.all<event_create>().empty());
}

// The marker may run after the model is gone (the driver drains its queue
// at exit): it then logs nothing and frees its data (ASan's leak check).
TEST(CudaModelMarkers, AMarkerThatRunsAfterTheModelLogsNothing) {
  recorder rec{{}};
  capture_sink sink;
  rec.add_sink(sink);
  fake_driver driver;
  {
    cuda_model model{rec, driver};
    model.host_function_entering({stream_a});
  }
  const std::size_t before = sink.records.size();
  driver.run_host_functions();
  EXPECT_EQ(sink.records.size(), before);
}

// Note [Threads end in the log]
TEST_F(CudaModel, AnEndingThreadLogsThreadExitAndForgetsItsPerThreadStream) {
  thread_id worker{};
  std::thread([&] {
    model.stream_synchronized(here, {0, true});
    const annotated_range r[] = {{0x10000, 8, access_mode::read}};
    model.annotate_next_launch({0, true}, r);
    worker = rec.current_thread();
    EXPECT_EQ(model.footprint().per_thread_streams, 1u);
  }).join();
  EXPECT_EQ(model.footprint().per_thread_streams, 0u);
  EXPECT_EQ(model.footprint().annotations, 0u);
  ASSERT_FALSE(sink.records.empty());
  EXPECT_TRUE(std::holds_alternative<thread_exit>(sink.records.back().body));
  EXPECT_EQ(sink.records.back().header.thread, worker);
  // The main thread records on, under its own id.
  model.stream_synchronized(here, {0, true});
  EXPECT_NE(sink.records.back().header.thread, worker);
}

TEST_F(CudaModel, AThreadThatNeverRecordedLogsNothing) {
  std::thread([] {}).join();
  EXPECT_TRUE(sink.all<thread_exit>().empty());
}

TEST_F(CudaModel, ThreadChurnKeepsOnlyTheLiveThreadsPerThreadStreams) {
  model.stream_synchronized(here, {0, true});  // the main thread's stays
  for (int round = 0; round < 8; ++round) {
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&] { model.stream_synchronized(here, {0, true}); });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(model.footprint().per_thread_streams, 1u) << "round " << round;
  }
  EXPECT_EQ(sink.all<thread_exit>().size(), 64u);
  // Every worker had its own per-thread default stream.
  EXPECT_EQ(sink.all<stream_create>().size(), 65u);
}

TEST_F(CudaModel, StreamChurnKeepsBoundedHandleTables) {
  // Distinct handles, as a driver that never recycles one would hand out.
  for (std::uintptr_t i = 1; i <= 5000; ++i) {
    model.stream_created(here, i * 64, 0, 0);
    model.stream_synchronized(here, {i * 64});
    model.stream_destroyed(here, i * 64);
  }
  EXPECT_LE(model.footprint().stream_handles, 1024u);
}

// Note [No driver calls under the model's lock]: every driver query checks,
// from another thread, that the model is not locked meanwhile (a thread
// that needs the model's lock, as a driver callback would, gets it).
class lock_probing_driver final : public fake_driver {
 public:
  const cuda_model* model = nullptr;
  // Counted under a lock of the double's own: the model asks unlocked on
  // purpose, so two threads' first sight of one stream ask at once.
  std::map<std::string, int> queries;
  std::vector<std::string> asked_under_lock;

  ~lock_probing_driver() override {
    for (auto& t : stuck_probes_) t.join();
  }
  std::int32_t current_device() override {
    probe("current_device");
    return fake_driver::current_device();
  }
  std::optional<stream_description> describe_stream(std::uintptr_t s) override {
    probe("describe_stream");
    return fake_driver::describe_stream(s);
  }
  std::optional<kernel_description> describe_kernel(std::uintptr_t k) override {
    probe("describe_kernel");
    return fake_driver::describe_kernel(k);
  }
  std::optional<raw_graph> describe_graph(std::uintptr_t g) override {
    probe("describe_graph");
    return fake_driver::describe_graph(g);
  }
  memory_kind untracked_memory_kind(std::uint64_t address, memory_side side) override {
    probe("untracked_memory_kind");
    return fake_driver::untracked_memory_kind(address, side);
  }
  std::string function_name(std::uintptr_t fn) override {
    probe("function_name");
    return fake_driver::function_name(fn);
  }

 private:
  void probe(const std::string& query) {
    {
      const std::lock_guard<std::mutex> hold(queries_mutex_);
      ++queries[query];
    }
    if (model == nullptr) return;
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    std::thread t([m = model, done] {
      m->footprint();  // takes the model's lock
      done->set_value();
    });
    if (finished.wait_for(std::chrono::seconds(2)) == std::future_status::ready) {
      t.join();
      return;
    }
    asked_under_lock.push_back(query);
    stuck_probes_.push_back(std::move(t));  // gets the lock once the call returns
  }
  std::vector<std::thread> stuck_probes_;
  std::mutex queries_mutex_;
};

class CudaModelDriverQueries : public model_test<lock_probing_driver> {
 protected:
  void SetUp() override {
    model_test::SetUp();
    driver.model = &model;
  }
};

TEST_F(CudaModelDriverQueries, NoQueryRunsUnderTheModelsLock) {
  driver.kernels[0xabc] = kernel_description{"_Z1kPf", {{0, 8}}, true};
  driver.kernels[0xdef] = kernel_description{"_Z1gPf", {{0, 8}}, true};
  std::uint64_t p = 0x10000;
  void* params[] = {&p};
  raw_graph g;
  raw_graph_node host_node;
  host_node.kind = raw_node_kind::host;
  host_node.host_fn = 0x1234;
  g.nodes = {kernel_node(0xdef, params),
             copy_node({0x10000, 64, memory_side::device},
                       {0x900000, 64, memory_side::device}),  // untracked source
             host_node};
  g.edges = {{0, 1}, {1, 2}};
  driver.graphs[0x6000] = g;

  model.stream_created(here, stream_a, 0, 0);
  model.allocated(here, 0x10000, 256, memory_kind::device);
  model.stream_synchronized(here, {0, false});
  model.stream_synchronized(here, {0, true});
  model.stream_queried(here, {stream_b}, true);  // not seen created
  model.kernel_launched(here, {stream_a}, 0xabc, kernel_arguments::from_pointers(params));
  model.copied(here, {stream_a}, {0x10000, 64, memory_side::device},
               {0x800000, 64, memory_side::device}, true);  // untracked source
  model.memset(here, {0, false}, {0x700000, 64, memory_side::device}, true);
  model.host_function_launched(here, {stream_a}, 0x1234);
  model.graph_instantiated(here, 0x7000, 0x6000);
  model.device_synchronized(here);
  model.freed(here, 0x10000, free_mode::stream_ordered, stream_arg{0, false});

  EXPECT_TRUE(driver.asked_under_lock.empty())
      << "asked with the model locked: " << ::testing::PrintToString(driver.asked_under_lock);
  for (const char* query : {"current_device", "describe_stream", "describe_kernel",
                            "describe_graph", "untracked_memory_kind", "function_name"}) {
    EXPECT_GT(driver.queries[query], 0) << query << " was never asked";
  }
  EXPECT_EQ(sink.all<graph_instantiate>().size(), 1u);
  EXPECT_EQ(sink.all<kernel_launch>().size(), 1u);
}

// A stream another thread describes meanwhile is created once.
TEST_F(CudaModelDriverQueries, AnUnknownStreamAskedByTwoThreadsIsOneStream) {
  driver.model = nullptr;  // no probing: the threads race on purpose
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] { model.stream_synchronized(here, {stream_b}); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(sink.all<stream_create>().size(), 1u);
  const auto syncs = sink.all<stream_synchronize>();
  ASSERT_EQ(syncs.size(), 4u);
  for (const auto& s : syncs) EXPECT_EQ(s.stream, syncs[0].stream);
}

// Holds the model's lock: a record being emitted blocks in the sink.
class blocking_sink final : public record_sink {
 public:
  std::promise<void> entered;
  std::shared_future<void> release;
  void on_record(const record& r) override {
    if (!std::holds_alternative<stream_synchronize>(r.body)) return;
    entered.set_value();
    release.wait();
  }
};

// Note [Kernel handles die with their module]: an unload reported while
// another thread holds the model's lock does not wait for it, and the next
// launch describes its kernel again.
TEST_F(CudaModel, ModuleUnloadDoesNotWaitForTheModelsLock) {
  driver.kernels[0xabc] = kernel_description{"_Z1kv", {}, true};
  model.stream_created(here, stream_a, 0, 0);
  model.kernel_launched(here, {stream_a}, 0xabc, {});
  std::promise<void> release;
  blocking_sink blocker;
  blocker.release = release.get_future().share();
  rec.add_sink(blocker);
  std::thread holder([&] { model.stream_synchronized(here, {stream_a}); });
  blocker.entered.get_future().wait();
  auto unloaded = std::async(std::launch::async, [&] { model.modules_unloaded(); });
  const bool waited = unloaded.wait_for(std::chrono::seconds(2)) != std::future_status::ready;
  release.set_value();
  holder.join();
  unloaded.wait();
  EXPECT_FALSE(waited) << "modules_unloaded() waited for the model's lock";
  rec.remove_sink(blocker);
  model.kernel_launched(here, {stream_a}, 0xabc, {});
  EXPECT_EQ(driver.kernel_queries.load(), 2);
}

}  // namespace
}  // namespace streamsan::injection
