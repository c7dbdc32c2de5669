// Graph memory nodes through the model and the real engine (Note [Graph
// allocations]): alloc and free nodes read at instantiation, the addresses
// before and after each launch, and cudaMallocAsync / cudaFreeAsync during
// capture.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/inject/model_fixture.h"

namespace streamsan::injection {
namespace {

constexpr std::uintptr_t writer = 0xabc;  // k(float*)
constexpr std::uintptr_t reader = 0xabd;  // r(const float*)
constexpr std::uint64_t d = 0x70000;      // the graph's address
constexpr std::uintptr_t s1 = 0x51, s2 = 0x52;
constexpr std::uintptr_t graph = 0x9000, exec = 0x9100;
constexpr std::uintptr_t freer_graph = 0x9200, freer_exec = 0x9300;
constexpr std::uintptr_t e1 = 0xe1;

using strings = std::vector<std::string>;

class GraphMemory : public model_fixture {
 protected:
  void SetUp() override {
    model_fixture::SetUp();
    driver.kernels[writer] = kernel_description{"_Z1kPf", {{0, 8}}, true};
    driver.kernels[reader] = kernel_description{"_Z1rPKf", {{0, 8}}, true};
    model.stream_created(here, s1, 1, 0);
    model.stream_created(here, s2, 1, 0);
    model.event_created(here, e1, 0);
  }
  static raw_graph_node alloc_node(std::uint64_t address, std::uintptr_t handle = 0) {
    raw_graph_node n;
    n.kind = raw_node_kind::mem_alloc;
    n.dst = memory_region{address, 64, memory_side::device};
    n.handle = handle;
    return n;
  }
  static raw_graph_node free_node(std::uint64_t address) {
    raw_graph_node n;
    n.kind = raw_node_kind::mem_free;
    n.dst = memory_region{address, 0, memory_side::device};
    return n;
  }
  raw_graph_node kernel(std::uint64_t pointer) {
    raw_graph_node n;
    n.kind = raw_node_kind::kernel;
    n.kernel = writer;
    n.args = args(pointer);
    return n;
  }
  // alloc(d) -> fill(d) [-> free(d)]
  void make_fill_graph(bool frees) {
    raw_graph g;
    g.nodes = {alloc_node(d), kernel(d)};
    g.edges = {{0, 1}};
    if (frees) {
      g.nodes.push_back(free_node(d));
      g.edges.emplace_back(1, 2);
    }
    driver.graphs[graph] = g;
    model.graph_instantiated(here, exec, graph);
  }
  void read_on(std::uintptr_t stream) {
    model.kernel_launched(here, {stream}, reader, args(d));
  }
  void s2_waits_for_s1() {
    model.event_recorded(here, e1, {s1});
    model.stream_waited_event(here, {s2}, e1);
  }
  std::vector<alloc_id> graph_allocations() const {
    std::vector<alloc_id> out;
    for (const auto& r : sink.all<alloc_record>()) {
      if (r.kind == memory_kind::stream_ordered && is_none(r.stream)) out.push_back(r.alloc);
    }
    return out;
  }
};

TEST_F(GraphMemory, AllocAndFreeNodesNameTheGraphsAllocationAndAreNotListed) {
  make_fill_graph(/*frees=*/true);
  const auto made = graph_allocations();
  ASSERT_EQ(made.size(), 1u);
  const auto& inst = sink.last<graph_instantiate>();
  ASSERT_EQ(inst.nodes.size(), 3u);
  EXPECT_EQ(inst.nodes[0].kind, graph_node_kind::mem_alloc);
  EXPECT_EQ(inst.nodes[0].memory, made[0]);
  EXPECT_EQ(inst.nodes[2].kind, graph_node_kind::mem_free);
  EXPECT_EQ(inst.nodes[2].memory, made[0]);
  ASSERT_EQ(inst.node_accesses[1].size(), 1u);
  EXPECT_EQ(inst.node_accesses[1][0].range.alloc, made[0]);
  model.graph_launched(here, exec, {s1});
  model.graph_launched(here, exec, {s1});
  EXPECT_EQ(kinds(), strings{});
  EXPECT_EQ(unmodelled(), strings{});
}

TEST_F(GraphMemory, WorkAfterALaunchThatFreesTheMemoryIsUseAfterFree) {
  make_fill_graph(/*frees=*/true);
  model.graph_launched(here, exec, {s1});
  s2_waits_for_s1();
  read_on(s2);
  EXPECT_EQ(kinds(), strings{"use-after-free"});
}

TEST_F(GraphMemory, WorkBeforeTheFirstLaunchIsUseBeforeAlloc) {
  make_fill_graph(/*frees=*/false);
  read_on(s2);
  EXPECT_EQ(kinds(), strings{"use-before-alloc"});
}

TEST_F(GraphMemory, MemoryTheGraphKeepsIsLiveUntilFreedForWorkOrderedAfterTheLaunch) {
  make_fill_graph(/*frees=*/false);
  model.graph_launched(here, exec, {s1});
  s2_waits_for_s1();
  read_on(s2);
  model.freed(here, d, free_mode::stream_ordered, stream_arg{s2});
  model.graph_launched(here, exec, {s1});  // allocates it again
  EXPECT_EQ(kinds(), strings{});
  model.freed(here, d, free_mode::synchronizing);  // cudaFree: does not wait for s1
  EXPECT_EQ(kinds(), strings{"free-while-in-use"});
}

TEST_F(GraphMemory, AnotherStreamNotOrderedAfterTheLaunchIsReported) {
  make_fill_graph(/*frees=*/false);
  model.graph_launched(here, exec, {s1});
  read_on(s2);
  const auto found = kinds();
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found[0], "use-before-alloc");
}

TEST_F(GraphMemory, AFreeNodeOfAnotherGraphFreesAtItsLaunch) {
  make_fill_graph(/*frees=*/false);
  raw_graph f;
  f.nodes = {free_node(d)};
  driver.graphs[freer_graph] = f;
  model.graph_instantiated(here, freer_exec, freer_graph);
  EXPECT_EQ(sink.last<graph_instantiate>().nodes[0].memory, graph_allocations().at(0));
  model.graph_launched(here, exec, {s1});
  s2_waits_for_s1();
  read_on(s2);
  model.graph_launched(here, freer_exec, {s1});  // not after the read on s2
  EXPECT_EQ(kinds(), strings{"free-while-in-use"});
  read_on(s1);
  EXPECT_EQ(kinds(), (strings{"free-while-in-use", "use-after-free"}));
}

TEST_F(GraphMemory, AnAddressTheGraphHandsOutTwiceNamesTheAllocationANodeRunsWithin) {
  // alloc A(d) -> fill -> free(d) -> alloc B(d) -> fill: the driver gave
  // both the same address (graphMemoryNodes' d_input and d_negSquare).
  raw_graph g;
  g.nodes = {alloc_node(d), kernel(d), free_node(d), alloc_node(d), kernel(d)};
  g.edges = {{0, 1}, {1, 2}, {2, 3}, {3, 4}};
  driver.graphs[graph] = g;
  model.graph_instantiated(here, exec, graph);
  const auto made = graph_allocations();
  ASSERT_EQ(made.size(), 2u);
  const auto& inst = sink.last<graph_instantiate>();
  EXPECT_EQ(inst.nodes[2].memory, made[0]);
  EXPECT_EQ(inst.node_accesses[1].at(0).range.alloc, made[0]);
  EXPECT_EQ(inst.node_accesses[4].at(0).range.alloc, made[1]);
  EXPECT_EQ(kinds(), strings{});
  model.graph_launched(here, exec, {s1});
  read_on(s1);  // B is live after the launch
  EXPECT_EQ(kinds(), strings{});
  EXPECT_EQ(sink.last<kernel_launch>().accesses.at(0).range.alloc, made[1]);
}

TEST_F(GraphMemory, ANodeOutsideTheAllocationsLifetimeIsReportedAtInstantiation) {
  raw_graph g;
  g.nodes = {alloc_node(d), kernel(d), free_node(d)};
  g.edges = {{0, 2}};  // the fill is ordered after neither
  driver.graphs[graph] = g;
  model.graph_instantiated(here, exec, graph);
  EXPECT_EQ(kinds(), strings{"use-before-alloc"});
}

TEST_F(GraphMemory, CapturedMallocAsyncAndFreeAsyncAllocateNothingNow) {
  model.capture_began(here, {s1});
  driver.captures[s1] = capture_frontier{graph, {0x77}};
  model.allocated(here, d, 64, memory_kind::stream_ordered, stream_arg{s1});
  model.kernel_launched(here, {s1}, writer, args(d));
  model.freed(here, d, free_mode::stream_ordered, stream_arg{s1});
  model.capture_ended(here, {s1}, graph);
  driver.captures.erase(s1);
  EXPECT_TRUE(sink.all<alloc_record>().empty());
  EXPECT_TRUE(sink.all<free_record>().empty());
  make_fill_graph(/*frees=*/true);  // what the driver reads back
  model.graph_launched(here, exec, {s1});
  EXPECT_EQ(kinds(), strings{});
  EXPECT_EQ(unmodelled(), strings{});
}

TEST_F(GraphMemory, AFreeNodeOfMemoryNeverSeenAllocatedIsListed) {
  raw_graph g;
  g.nodes = {free_node(0x123000)};
  driver.graphs[graph] = g;
  model.graph_instantiated(here, exec, graph);
  EXPECT_EQ(unmodelled(), strings{"cudaGraphInstantiate (memory free node of unknown memory)"});
  EXPECT_EQ(sink.last<graph_instantiate>().nodes[0].kind, graph_node_kind::other);
}

TEST_F(GraphMemory, ADestroyedExecForgetsItsMemory) {
  make_fill_graph(/*frees=*/false);
  model.graph_launched(here, exec, {s1});
  model.graph_exec_destroyed(exec);
  // The allocation outlives the exec (graph destruction frees nothing).
  s2_waits_for_s1();
  read_on(s2);
  EXPECT_EQ(kinds(), strings{});
  EXPECT_EQ(model.live_allocations(), 1u);
}

}  // namespace
}  // namespace streamsan::injection
