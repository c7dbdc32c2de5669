// Graph memory nodes through the model and the real engine (Note [Graph
// allocations]): alloc and free nodes read at instantiation, the addresses
// before and after each launch, and cudaMallocAsync / cudaFreeAsync during
// capture.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/inject/model_fixture.h"

namespace streamsan::injection {
namespace graph_memory_test {  // Note [Unity test programs in the sanitizer passes]
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

TEST_F(GraphMemory, AFreeNodeOfMemoryNeverSeenAllocatedIsListedAtEachLaunch) {
  raw_graph g;
  g.nodes = {free_node(0x123000)};
  driver.graphs[graph] = g;
  model.graph_instantiated(here, exec, graph);
  EXPECT_EQ(unmodelled(), strings{});
  model.graph_launched(here, exec, {s1});
  EXPECT_EQ(unmodelled(), strings{"cudaGraphLaunch (memory free node of unknown memory)"});
}

TEST_F(GraphMemory, AFreeGraphInstantiatedBeforeTheAllocatingGraphFreesAtItsLaunch) {
  raw_graph f;
  f.nodes = {free_node(d)};
  driver.graphs[freer_graph] = f;
  model.graph_instantiated(here, freer_exec, freer_graph);  // d names nothing yet
  make_fill_graph(/*frees=*/false);
  model.graph_launched(here, exec, {s1});
  s2_waits_for_s1();
  read_on(s2);
  model.graph_launched(here, freer_exec, {s1});  // not after the read on s2
  EXPECT_EQ(kinds(), strings{"free-while-in-use"});
  EXPECT_EQ(std::get<free_record>(sink.last<free_record>().body).alloc, graph_allocations().at(0));
  EXPECT_EQ(unmodelled(), strings{});
}

TEST_F(GraphMemory, AGraphInstantiatedAgainNamesTheSameMemory) {
  raw_graph g;
  g.nodes = {alloc_node(d, 0xa1), kernel(d)};
  g.edges = {{0, 1}};
  driver.graphs[graph] = g;
  raw_graph f;
  f.nodes = {free_node(d)};
  driver.graphs[freer_graph] = f;
  model.graph_instantiated(here, exec, graph);
  model.graph_instantiated(here, freer_exec, freer_graph);
  model.graph_launched(here, exec, {s1});
  model.graph_launched(here, freer_exec, {s1});
  model.graph_exec_destroyed(exec);
  model.graph_instantiated(here, 0x9101, graph);
  EXPECT_EQ(graph_allocations().size(), 1u);
  model.graph_launched(here, 0x9101, {s1});
  model.graph_launched(here, freer_exec, {s1});  // frees it again: not a double free
  EXPECT_EQ(kinds(), strings{});
  model.graph_exec_destroyed(0x9101);
  model.graph_destroyed(graph);  // a new graph with the same handle is new memory
  model.graph_instantiated(here, exec, graph);
  EXPECT_EQ(graph_allocations().size(), 2u);
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
}  // namespace graph_memory_test
}  // namespace streamsan::injection

namespace streamsan::injection {
namespace graph_memory_test {  // Note [Unity test programs in the sanitizer passes]
namespace {

// cuda-samples' graphMemoryNodes, replayed as the model sees it: the same
// negate-squares work in a stream, in a stream-captured graph, in an
// explicit graph, and in one that leaves its result live for kernels and
// frees outside the graph (cudaFree, cudaFreeAsync, another graph's free
// node). Each graph hands one address to two of its allocations, as the
// driver did on an H100.
class GraphMemoryNodesSample : public model_fixture {
 protected:
  static constexpr std::uint64_t n = 1024, bytes = 4 * n;
  static constexpr std::uintptr_t square = 0x5a1, negate = 0x5a2, validate = 0x5a3;
  static constexpr std::uintptr_t stream = 0x61, stream2 = 0x62, capturing = 0x63;
  static constexpr std::uint64_t host_in = 0x1000000, host_square = 0x2000000,
                                 host_neg = 0x3000000;  // pageable, never allocated
  static constexpr std::uint64_t ref = 0x7000000, flag = 0x7100000;

  void SetUp() override {
    model_fixture::SetUp();
    const std::vector<param_layout> two_arrays{{0, 8}, {8, 8}, {16, 4}};
    driver.kernels[square] = kernel_description{"_Z11squareArrayPKfPfi", two_arrays, true};
    driver.kernels[negate] = kernel_description{"_Z11negateArrayPKfPfi", two_arrays, true};
    driver.kernels[validate] = kernel_description{"_Z11validateGPUPf15negSquareArraysPb",
                                                  {{0, 8}, {8, 48}, {56, 8}}, true};
  }
  // kernelParams whose i-th entry points at the words of parameter i.
  kernel_arguments params(std::vector<std::vector<std::uint64_t>> values) {
    pointers.emplace_back();
    for (auto& v : values) {
      words.push_back(std::move(v));
      pointers.back().push_back(words.back().data());
    }
    return kernel_arguments::from_pointers(pointers.back().data());
  }
  kernel_arguments two_arrays(std::uint64_t in, std::uint64_t out) {
    return params({{in}, {out}, {n}});
  }
  void copy(std::uintptr_t s, std::uint64_t dst, memory_side dst_side, std::uint64_t src,
            memory_side src_side) {
    model.copied(here, {s}, {dst, bytes, dst_side}, {src, bytes, src_side}, true);
  }
  // doNegateSquaresInStream on `s`, its allocations at `in`, `sq`, `neg`.
  void negate_squares_in_stream(std::uintptr_t s, std::uint64_t in, std::uint64_t sq,
                                std::uint64_t neg) {
    model.stream_created(here, stream2, 1, 0);
    for (const std::uintptr_t e : {0xe1, 0xe2, 0xe3}) model.event_created(here, e, 0);
    model.allocated(here, in, bytes, memory_kind::stream_ordered, stream_arg{s});
    model.allocated(here, sq, bytes, memory_kind::stream_ordered, stream_arg{s});
    copy(s, in, memory_side::device, host_in, memory_side::host);
    model.kernel_launched(here, {s}, square, two_arrays(in, sq));
    model.event_recorded(here, 0xe1, {s});
    model.stream_waited_event(here, {stream2}, 0xe1);
    copy(stream2, host_square, memory_side::host, sq, memory_side::device);
    model.freed(here, in, free_mode::stream_ordered, stream_arg{s});
    model.allocated(here, neg, bytes, memory_kind::stream_ordered, stream_arg{s});
    model.kernel_launched(here, {s}, negate, two_arrays(sq, neg));
    model.event_recorded(here, 0xe2, {s});
    copy(s, host_neg, memory_side::host, neg, memory_side::device);
    model.freed(here, neg, free_mode::stream_ordered, stream_arg{s});
    model.stream_waited_event(here, {stream2}, 0xe2);
    model.freed(here, sq, free_mode::stream_ordered, stream_arg{stream2});
    model.event_recorded(here, 0xe3, {stream2});
    model.stream_waited_event(here, {s}, 0xe3);
    model.stream_destroyed(here, stream2);
    for (const std::uintptr_t e : {0xe1, 0xe2, 0xe3}) model.event_destroyed(here, e);
  }
  raw_graph_node memory_node(raw_node_kind kind, std::uint64_t address) {
    raw_graph_node node;
    node.kind = kind;
    node.dst = memory_region{address, kind == raw_node_kind::mem_alloc ? bytes : 0,
                             memory_side::device};
    return node;
  }
  raw_graph_node copy_node(std::uint64_t dst, memory_side dst_side, std::uint64_t src,
                           memory_side src_side) {
    raw_graph_node node;
    node.kind = raw_node_kind::memcpy;
    node.dst = memory_region{dst, bytes, dst_side};
    node.src = memory_region{src, bytes, src_side};
    return node;
  }
  raw_graph_node kernel_node(std::uintptr_t kernel, std::uint64_t in, std::uint64_t out) {
    raw_graph_node node;
    node.kind = raw_node_kind::kernel;
    node.kernel = kernel;
    node.args = two_arrays(in, out);
    return node;
  }
  // createNegateSquaresGraphExplicitly's graph (the captured one has the
  // same nodes and edges): `neg` shares `in`'s address.
  raw_graph negate_squares_graph(std::uint64_t in, std::uint64_t sq, bool free_neg) {
    raw_graph g;
    g.nodes = {memory_node(raw_node_kind::mem_alloc, in),                            // 0
               memory_node(raw_node_kind::mem_alloc, sq),                            // 1
               copy_node(in, memory_side::device, host_in, memory_side::host),       // 2
               kernel_node(square, in, sq),                                          // 3
               copy_node(host_square, memory_side::host, sq, memory_side::device),   // 4
               memory_node(raw_node_kind::mem_free, in),                             // 5
               memory_node(raw_node_kind::mem_alloc, in),                            // 6
               kernel_node(negate, sq, in),                                          // 7
               memory_node(raw_node_kind::mem_free, sq),                             // 8
               copy_node(host_neg, memory_side::host, in, memory_side::device)};     // 9
    g.edges = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {3, 5}, {5, 6}, {6, 7}, {4, 8}, {7, 8}, {7, 9}};
    if (free_neg) {
      g.nodes.push_back(memory_node(raw_node_kind::mem_free, in));  // 10
      g.edges.emplace_back(9, 10);
    }
    return g;
  }
  void validate_on_stream(std::uint64_t neg, const call_site& at) {
    // What a GPU run measures (each launch reads ref: Note [Learned access
    // modes]), not what inference guesses from the struct's words.
    const annotated_range measured[] = {{neg, bytes, access_mode::read},
                                        {ref, bytes, access_mode::read},
                                        {flag, 1, access_mode::write}};
    model.annotate_next_launch({stream}, measured);
    // negSquareArrays by value: input and square unset, negSquare = ref.
    model.kernel_launched(at, {stream}, validate,
                          params({{neg}, {0, 0, ref, n, bytes, n / 512}, {flag}}));
  }
};

TEST_F(GraphMemoryNodesSample, ReportsNothingAndListsNothingUnmodelled) {
  model.allocated(here, ref, bytes, memory_kind::device);
  // A synchronous upload from pageable memory: its DMA may still run when
  // the call returns (Note [Staged uploads]).
  model.copied(here, {0}, {ref, bytes, memory_side::device}, {host_neg, bytes, memory_side::host},
               false);
  model.allocated(here, flag, 1, memory_kind::managed);
  model.stream_created(here, stream, 1, 0);

  negate_squares_in_stream(stream, 0x8000000, 0x8100000, 0x8000000);
  model.stream_synchronized(here, {stream});

  // In a stream-captured graph (the forked stream joins the capture).
  model.stream_created(here, capturing, 1, 0);
  model.capture_began(here, {capturing});
  driver.captures[capturing] = capture_frontier{0xa000, {0x77}};
  driver.captures[stream2] = capture_frontier{0xa000, {0x78}};
  negate_squares_in_stream(capturing, 0x9000000, 0x9100000, 0x9000000);
  driver.captures.clear();
  model.capture_ended(here, {capturing}, 0xa000);
  driver.graphs[0xa000] = negate_squares_graph(0x9000000, 0x9100000, true);
  model.graph_instantiated(here, 0xb000, 0xa000);
  model.stream_destroyed(here, capturing);
  model.graph_launched(here, 0xb000, {stream});
  model.stream_synchronized(here, {stream});

  // In an explicitly constructed graph.
  driver.graphs[0xa001] = negate_squares_graph(0xa000000, 0xa100000, true);
  model.graph_instantiated(here, 0xb001, 0xa001);
  model.graph_launched(here, 0xb001, {stream});
  model.stream_synchronized(here, {stream});

  // d_negSquare left live, read by validateGPU, freed outside the graph.
  constexpr std::uint64_t neg = 0xb000000;
  driver.graphs[0xa002] = negate_squares_graph(neg, 0xb100000, false);
  model.graph_instantiated(here, 0xb002, 0xa002);
  const std::uint64_t site[3][1] = {{0x401001}, {0x401002}, {0x401003}};
  model.graph_launched(here, 0xb002, {stream});
  validate_on_stream(neg, call_site{site[0]});
  model.stream_synchronized(here, {stream});
  model.freed(here, neg, free_mode::synchronizing);

  model.graph_launched(here, 0xb002, {stream});
  validate_on_stream(neg, call_site{site[1]});
  model.freed(here, neg, free_mode::stream_ordered, stream_arg{stream});
  model.stream_synchronized(here, {stream});

  raw_graph frees;
  frees.nodes = {memory_node(raw_node_kind::mem_free, neg)};
  driver.graphs[0xa003] = frees;
  model.graph_instantiated(here, 0xb003, 0xa003);
  model.graph_launched(here, 0xb002, {stream});
  validate_on_stream(neg, call_site{site[2]});
  model.graph_launched(here, 0xb003, {stream});
  model.stream_synchronized(here, {stream});

  EXPECT_EQ(unmodelled(), strings{});
  // What is left are the three possible races the acceptance run lists: the
  // upload's DMA into ref against each validateGPU launch (three call
  // sites), on a stream that is not ordered after the legacy stream.
  ASSERT_EQ(kinds(), (strings{"stream-race", "stream-race", "stream-race"}));
  for (const diagnostic& d : eng.diagnostics()) {
    EXPECT_EQ(d.certainty, diagnostic_certainty::candidate);
    EXPECT_EQ(d.previous->op, operation_kind::staged_upload);
    EXPECT_EQ(d.current.name, eng.diagnostics()[0].current.name);
  }
}

}  // namespace
}  // namespace graph_memory_test
}  // namespace streamsan::injection
