// Edits of instantiated graphs, conditional nodes and stream memory
// operations, through the model (Note [Editing an instantiated graph],
// Note [Conditional nodes], Note [Stream memory operations]) and, for the
// verdicts, the real engine.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/inject/model_fixture.h"

namespace streamsan::injection {
namespace {

constexpr std::uintptr_t writer = 0xabc;  // k(float*)
constexpr std::uint64_t a = 0x10000, b = 0x20000, c = 0x30000;
constexpr std::uintptr_t s1 = 0x51, s2 = 0x52;
constexpr std::uintptr_t graph = 0x9000, exec = 0x9100;

class GraphEdits : public model_fixture {
 protected:
  void SetUp() override {
    model_fixture::SetUp();
    driver.kernels[writer] = kernel_description{"_Z1kPf", {{0, 8}}, true};
    for (const std::uint64_t p : {a, b, c}) model.allocated(here, p, 64, memory_kind::device);
    model.stream_created(here, s1, 1, 0);
    model.stream_created(here, s2, 1, 0);
  }

  raw_graph_node kernel(std::uint64_t pointer, std::uintptr_t handle = 0) {
    raw_graph_node n;
    n.kind = raw_node_kind::kernel;
    n.kernel = writer;
    n.args = args(pointer);
    n.handle = handle;
    return n;
  }
  static raw_graph_node memset_node(std::uint64_t dst, std::uintptr_t handle = 0) {
    raw_graph_node n;
    n.kind = raw_node_kind::memset;
    n.dst = memory_region{dst, 64, memory_side::device};
    n.handle = handle;
    return n;
  }
  static raw_graph_node empty_node(std::uintptr_t handle = 0) {
    raw_graph_node n;
    n.kind = raw_node_kind::empty;
    n.handle = handle;
    return n;
  }
  static raw_graph_node conditional_node(std::uintptr_t handle) {
    raw_graph_node n;
    n.kind = raw_node_kind::conditional;
    n.handle = handle;
    return n;
  }
  // The allocation id of each node's first access in the last instantiate.
  std::vector<std::uint32_t> written_allocs() const {
    std::vector<std::uint32_t> out;
    for (const auto& accesses : sink.last<graph_instantiate>().node_accesses) {
      out.push_back(accesses.empty() ? 0 : raw(accesses[0].range.alloc));
    }
    return out;
  }
  std::uint32_t alloc_of(std::uint64_t address) const {
    for (const auto& r : sink.all<alloc_record>()) {
      if (r.address == address) return raw(r.alloc);
    }
    return 0;
  }
  // A copy on s2 that reads `address`: exact on both sides with a memset node.
  void read_on_s2(std::uint64_t address) {
    model.copied(here, {s2}, {c, 64, memory_side::device}, {address, 64, memory_side::device},
                 true);
  }
};

using strings = std::vector<std::string>;

TEST_F(GraphEdits, KernelNodeSetParamsGivesLaterLaunchesTheNewArguments) {
  raw_graph g;
  g.nodes = {kernel(a, 0xa1)};
  driver.graphs[graph] = g;
  model.graph_instantiated(here, exec, graph);
  const graph_id id = std::get<graph_instantiate>(sink.last<graph_instantiate>().body).graph;
  const std::uint64_t edit_frames[] = {0x401000};
  model.graph_exec_node_set(call_site{edit_frames}, exec, 0xa1, kernel(b),
                            "cudaGraphExecKernelNodeSetParams");
  const auto& again = sink.last<graph_instantiate>();
  EXPECT_EQ(std::get<graph_instantiate>(again.body).graph, id);  // the same exec
  EXPECT_EQ(written_allocs(), std::vector<std::uint32_t>{alloc_of(b)});
  EXPECT_EQ(sink.tables.stack(again.nodes[0].stack)[0], 0x401000u);
  EXPECT_TRUE(unmodelled().empty());
}

TEST_F(GraphEdits, AnEditRacesOnlyWithWhatTheEditedNodeTouches) {
  raw_graph g;
  g.nodes = {memset_node(a, 0xa1)};
  driver.graphs[graph] = g;
  model.graph_instantiated(here, exec, graph);
  model.graph_exec_node_set(here, exec, 0xa1, memset_node(b), "cudaGraphExecMemsetNodeSetParams");
  model.graph_launched(here, exec, {s1});
  read_on_s2(a);  // the graph no longer writes a
  EXPECT_EQ(kinds(), strings{});
  read_on_s2(b);
  EXPECT_EQ(kinds(), strings{"stream-race"});
}

TEST_F(GraphEdits, LaunchesBeforeAnEditKeepTheOldFootprint) {
  raw_graph g;
  g.nodes = {memset_node(a, 0xa1)};
  driver.graphs[graph] = g;
  model.graph_instantiated(here, exec, graph);
  model.graph_launched(here, exec, {s1});
  model.graph_exec_node_set(here, exec, 0xa1, memset_node(b), "cudaGraphExecMemsetNodeSetParams");
  read_on_s2(b);  // only a later launch writes b
  EXPECT_EQ(kinds(), strings{});
  read_on_s2(a);
  EXPECT_EQ(kinds(), strings{"stream-race"});
}

TEST_F(GraphEdits, ExecUpdateRereadsTheSourceGraphAndKeepsTheOriginalNodeNames) {
  raw_graph g, h;
  g.nodes = {memset_node(a, 0xa1), memset_node(a, 0xa2)};
  g.edges = {{0, 1}};
  h.nodes = {memset_node(b, 0xb1), memset_node(c, 0xb2)};
  h.edges = {{0, 1}};
  driver.graphs[graph] = g;
  driver.graphs[0x9500] = h;
  model.graph_instantiated(here, exec, graph);
  model.graph_exec_updated(here, exec, 0x9500, "cudaGraphExecUpdate");
  EXPECT_EQ(written_allocs(), (std::vector<std::uint32_t>{alloc_of(b), alloc_of(c)}));
  // Later edits name the node by the instantiated graph's handle, or the
  // update's.
  model.graph_exec_node_set(here, exec, 0xa1, memset_node(c), "cudaGraphExecMemsetNodeSetParams");
  model.graph_exec_node_set(here, exec, 0xb2, memset_node(a), "cudaGraphExecMemsetNodeSetParams");
  EXPECT_EQ(written_allocs(), (std::vector<std::uint32_t>{alloc_of(c), alloc_of(a)}));
  EXPECT_TRUE(unmodelled().empty());
}

TEST_F(GraphEdits, ADisabledNodeAccessesNothingUntilEnabledAgain) {
  raw_graph g;
  g.nodes = {memset_node(a, 0xa1)};
  driver.graphs[graph] = g;
  model.graph_instantiated(here, exec, graph);
  model.graph_exec_node_enabled(here, exec, 0xa1, false, "cudaGraphNodeSetEnabled");
  EXPECT_EQ(written_allocs(), std::vector<std::uint32_t>{0});
  // Parameters set while disabled take effect when enabled.
  model.graph_exec_node_set(here, exec, 0xa1, memset_node(b), "cudaGraphExecMemsetNodeSetParams");
  EXPECT_EQ(written_allocs(), std::vector<std::uint32_t>{0});
  model.graph_exec_node_enabled(here, exec, 0xa1, true, "cudaGraphNodeSetEnabled");
  EXPECT_EQ(written_allocs(), std::vector<std::uint32_t>{alloc_of(b)});
}

TEST_F(GraphEdits, EditsOfUnknownExecsAndNodesAreListed) {
  raw_graph g;
  g.nodes = {memset_node(a, 0xa1)};
  driver.graphs[graph] = g;
  model.graph_instantiated(here, exec, graph);
  const auto instantiations = sink.all<graph_instantiate>().size();
  model.graph_exec_node_set(here, 0x7777, 0xa1, memset_node(b), "cuGraphExecMemsetNodeSetParams");
  model.graph_exec_node_set(here, exec, 0xdead, memset_node(b), "cuGraphExecMemsetNodeSetParams");
  model.graph_exec_updated(here, exec, 0x9999, "cuGraphExecUpdate");  // not readable
  model.graph_exec_destroyed(exec);
  model.graph_exec_node_enabled(here, exec, 0xa1, false, "cuGraphNodeSetEnabled");
  EXPECT_EQ(sink.all<graph_instantiate>().size(), instantiations);
  EXPECT_EQ(unmodelled(),
            (strings{"cuGraphExecMemsetNodeSetParams (graph instantiated unseen)",
                     "cuGraphExecMemsetNodeSetParams (node not in the instantiated graph)",
                     "cuGraphExecUpdate (graph not readable)",
                     "cuGraphNodeSetEnabled (graph instantiated unseen)"}));
}

// Note [Conditional nodes]
// Note [Event nodes]: a graph's event record node records its event at each
// launch, an event wait node makes the launch wait; an exec edit changes the
// event of later launches only.
constexpr std::uintptr_t e1 = 0xe1, e2 = 0xe2;

raw_graph_node event_node(raw_node_kind kind, std::uintptr_t event, std::uintptr_t handle) {
  raw_graph_node n;
  n.kind = kind;
  n.event = event;
  n.handle = handle;
  return n;
}

class GraphEventNodes : public GraphEdits {
 protected:
  void SetUp() override {
    GraphEdits::SetUp();
    model.event_created(here, e1, 0);
    model.event_created(here, e2, 0);
  }
  // memset a, then record `event`.
  void instantiate_recording(std::uintptr_t event) {
    raw_graph g;
    g.nodes = {memset_node(a, 0xa1), event_node(raw_node_kind::event_record, event, 0xa2)};
    g.edges = {{0, 1}};
    driver.graphs[graph] = g;
    model.graph_instantiated(here, exec, graph);
  }
  // s2 writes a between a record of e2 and a record of e1; the graph waits
  // on e1, then memsets a.
  void write_a_on_s2_between_records() {
    model.event_recorded(here, e2, {s2});
    model.copied(here, {s2}, {a, 64, memory_side::device}, {c, 64, memory_side::device}, true);
    model.event_recorded(here, e1, {s2});
    raw_graph g;
    g.nodes = {event_node(raw_node_kind::event_wait, e1, 0xa1), memset_node(a, 0xa2)};
    g.edges = {{0, 1}};
    driver.graphs[graph] = g;
    model.graph_instantiated(here, exec, graph);
  }
};

TEST_F(GraphEventNodes, ARecordNodeOrdersAWaiterAfterTheLaunch) {
  instantiate_recording(e1);
  model.graph_launched(here, exec, {s1});
  model.stream_waited_event(here, {s2}, e1);
  read_on_s2(a);
  EXPECT_EQ(kinds(), strings{});
  EXPECT_TRUE(unmodelled().empty());
}

TEST_F(GraphEventNodes, AWaiterOnTheEventBeforeARecordEditRaces) {
  instantiate_recording(e1);
  model.event_recorded(here, e1, {s1});  // before the launch: orders nothing of it
  model.graph_exec_node_set(here, exec, 0xa2, event_node(raw_node_kind::event_record, e2, 0),
                            "cudaGraphExecEventRecordNodeSetEvent");
  model.graph_launched(here, exec, {s1});
  model.stream_waited_event(here, {s2}, e1);  // the old event
  read_on_s2(a);
  EXPECT_EQ(kinds(), strings{"stream-race"});
  EXPECT_TRUE(unmodelled().empty());
}

TEST_F(GraphEventNodes, AWaiterOnTheEditedEventIsOrdered) {
  instantiate_recording(e1);
  model.graph_exec_node_set(here, exec, 0xa2, event_node(raw_node_kind::event_record, e2, 0),
                            "cudaGraphExecEventRecordNodeSetEvent");
  model.graph_launched(here, exec, {s1});
  model.stream_waited_event(here, {s2}, e2);
  read_on_s2(a);
  EXPECT_EQ(kinds(), strings{});
}

TEST_F(GraphEventNodes, AWaitNodeOrdersTheLaunchAfterTheRecordItWaitsOn) {
  write_a_on_s2_between_records();
  model.graph_launched(here, exec, {s1});
  EXPECT_EQ(kinds(), strings{});
  EXPECT_TRUE(unmodelled().empty());
}

TEST_F(GraphEventNodes, AWaitNodeEditedToAnEarlierRecordRaces) {
  write_a_on_s2_between_records();
  model.graph_exec_node_set(here, exec, 0xa1, event_node(raw_node_kind::event_wait, e2, 0),
                            "cuGraphExecEventWaitNodeSetEvent");
  model.graph_launched(here, exec, {s1});
  EXPECT_EQ(kinds(), strings{"stream-race"});
}

// Note [Child graph edits]: the instantiated graph is read with its child
// graph node (0xc1) flattened: entry, the child's nodes, exit.
class GraphChildEdits : public GraphEdits {
 protected:
  void SetUp() override {
    GraphEdits::SetUp();
    raw_graph g;
    g.nodes = {empty_node(0xc1), memset_node(a, 0xd1), empty_node()};
    g.edges = {{0, 1}, {1, 2}};
    driver.graphs[graph] = g;
    model.graph_instantiated(here, exec, graph);
  }
};

TEST_F(GraphChildEdits, AnEditedChildGraphRunsTheNewChildsNodes) {
  raw_graph child;
  child.nodes = {memset_node(b, 0xe1)};
  driver.graphs[0x9600] = child;
  model.graph_exec_child_set(here, exec, 0xc1, 0x9600, "cudaGraphExecChildGraphNodeSetParams");
  EXPECT_EQ(written_allocs(), (std::vector<std::uint32_t>{0, alloc_of(b), 0}));
  model.graph_launched(here, exec, {s1});
  read_on_s2(a);  // the child no longer writes a
  EXPECT_EQ(kinds(), strings{});
  read_on_s2(b);
  EXPECT_EQ(kinds(), strings{"stream-race"});
  // Later edits name the child's node by either handle.
  model.graph_exec_node_set(here, exec, 0xe1, memset_node(c), "cudaGraphExecMemsetNodeSetParams");
  model.graph_exec_node_set(here, exec, 0xd1, memset_node(a), "cudaGraphExecMemsetNodeSetParams");
  EXPECT_EQ(written_allocs(), (std::vector<std::uint32_t>{0, alloc_of(a), 0}));
  EXPECT_TRUE(unmodelled().empty());
}

TEST_F(GraphChildEdits, AChildGraphUnlikeTheInstantiatedOneIsListedAndChangesNothing) {
  raw_graph child;
  child.nodes = {memset_node(b, 0xe1), memset_node(c, 0xe2)};
  child.edges = {{0, 1}};
  driver.graphs[0x9600] = child;
  const auto before = sink.all<graph_instantiate>().size();
  model.graph_exec_child_set(here, exec, 0xc1, 0x9600, "cuGraphExecChildGraphNodeSetParams");
  model.graph_exec_child_set(here, exec, 0xc1, 0x9999, "cuGraphExecChildGraphNodeSetParams");
  model.graph_exec_child_set(here, exec, 0xd1, 0x9600, "cuGraphExecChildGraphNodeSetParams");
  EXPECT_EQ(sink.all<graph_instantiate>().size(), before);
  EXPECT_EQ(unmodelled(),
            (strings{"cuGraphExecChildGraphNodeSetParams (child graph unlike the instantiated one)",
                     "cuGraphExecChildGraphNodeSetParams (graph not readable)",
                     "cuGraphExecChildGraphNodeSetParams (child graph unlike the instantiated one)"}));
}

TEST_F(GraphEdits, ConditionalBodiesRunBetweenTheNodeAndItsDependents) {
  // before -> cond{ body: x, y unordered } -> after
  raw_graph g, body;
  g.nodes = {memset_node(a), conditional_node(0xc1), memset_node(a)};
  g.edges = {{0, 1}, {1, 2}};
  body.nodes = {memset_node(a), memset_node(b), memset_node(b)};
  body.edges = {{0, 1}};
  driver.graphs[graph] = g;
  driver.graphs[0xb0d1] = body;
  const std::uintptr_t bodies[] = {0xb0d1};
  model.conditional_node_added(here, 0xc1, graph, conditional_kind::while_loop, bodies);
  model.graph_instantiated(here, exec, graph);
  const auto& inst = sink.last<graph_instantiate>();
  ASSERT_EQ(inst.nodes.size(), 7u);  // 3 + the body's 3 + the exit
  EXPECT_EQ(inst.nodes[1].kind, graph_node_kind::empty);
  // The body's nodes keep their accesses.
  EXPECT_EQ(written_allocs()[3], alloc_of(a));
  EXPECT_EQ(written_allocs()[5], alloc_of(b));
  EXPECT_TRUE(unmodelled().empty());
  // Only the body's unordered pair races: the nodes before and after the
  // conditional are ordered with every body node.
  EXPECT_EQ(kinds(), strings{"graph-node-race"});
  ASSERT_EQ(eng.diagnostics().size(), 1u);
  const auto& d = eng.diagnostics()[0];
  EXPECT_EQ(std::min(d.current.graph_node, d.previous->graph_node), 4u);
  EXPECT_EQ(std::max(d.current.graph_node, d.previous->graph_node), 5u);
  // A launch applies the body's accesses: a reader on another stream races.
  model.graph_launched(here, exec, {s1});
  read_on_s2(b);
  EXPECT_EQ(kinds(), (strings{"graph-node-race", "stream-race"}));
}

TEST_F(GraphEdits, BranchesOfAConditionalNeverRaceWithEachOther) {
  raw_graph g, then_body, else_body;
  g.nodes = {conditional_node(0xc1)};
  then_body.nodes = {memset_node(a)};
  else_body.nodes = {memset_node(a)};
  driver.graphs[graph] = g;
  driver.graphs[0xb0d1] = then_body;
  driver.graphs[0xb0d2] = else_body;
  const std::uintptr_t bodies[] = {0xb0d1, 0xb0d2};
  model.conditional_node_added(here, 0xc1, graph, conditional_kind::if_then, bodies);
  model.graph_instantiated(here, exec, graph);
  EXPECT_EQ(sink.last<graph_instantiate>().nodes.size(), 5u);
  EXPECT_EQ(kinds(), strings{});
}

TEST_F(GraphEdits, NestedConditionalsAreSplicedToo) {
  raw_graph g, outer, inner;
  g.nodes = {conditional_node(0xc1)};
  outer.nodes = {conditional_node(0xc2)};
  inner.nodes = {memset_node(b)};
  driver.graphs[graph] = g;
  driver.graphs[0xb0d1] = outer;
  driver.graphs[0xb0d2] = inner;
  const std::uintptr_t outer_bodies[] = {0xb0d1};
  const std::uintptr_t inner_bodies[] = {0xb0d2};
  model.conditional_node_added(here, 0xc1, graph, conditional_kind::if_then, outer_bodies);
  // The inner node belongs to the outer body: found by its owner graph.
  model.conditional_node_added(here, 0xc2, 0xb0d1, conditional_kind::while_loop, inner_bodies);
  model.graph_instantiated(here, exec, graph);
  const auto allocs = written_allocs();
  EXPECT_NE(std::find(allocs.begin(), allocs.end(), alloc_of(b)), allocs.end());
  EXPECT_TRUE(unmodelled().empty());
}

TEST_F(GraphEdits, AConditionalWhoseAddCallWasNotSeenIsListed) {
  raw_graph g;
  g.nodes = {conditional_node(0xc1)};
  driver.graphs[graph] = g;
  model.graph_instantiated(here, exec, graph);
  EXPECT_EQ(sink.last<graph_instantiate>().nodes[0].kind, graph_node_kind::other);
  EXPECT_EQ(unmodelled(),
            strings{"cudaGraphInstantiate (conditional node (its add call was not seen))"});
  // Destroying the graph forgets its conditional nodes.
  const std::uintptr_t bodies[] = {0xb0d1};
  driver.graphs[0xb0d1] = raw_graph{};
  model.conditional_node_added(here, 0xc1, graph, conditional_kind::if_then, bodies);
  model.graph_destroyed(graph);
  model.graph_instantiated(here, 0x9200, graph);
  EXPECT_EQ(unmodelled().size(), 2u);
}

// Note [Stream memory operations]
TEST_F(GraphEdits, AWaitValueAcquiresTheLastWriteValueToTheWord) {
  model.memset(here, {s1}, {a, 64, memory_side::device}, true);
  model.stream_value_written(here, {s1}, b, 4, true, "cuStreamWriteValue32");
  model.stream_value_waited(here, {s2}, b, 4, "cuStreamWaitValue32");
  read_on_s2(a);
  EXPECT_EQ(kinds(), strings{});
  EXPECT_TRUE(unmodelled().empty());
}

TEST_F(GraphEdits, WorkAfterTheWriteValueIsNotReleased) {
  model.stream_value_written(here, {s1}, b, 8, true, "cuStreamWriteValue64");
  model.memset(here, {s1}, {a, 64, memory_side::device}, true);
  model.stream_value_waited(here, {s2}, b, 8, "cuStreamWaitValue64");
  read_on_s2(a);
  EXPECT_EQ(kinds(), strings{"stream-race"});
}

TEST_F(GraphEdits, AWaitValueWithoutASeenReleaseIsListedAndOrdersNothing) {
  model.memset(here, {s1}, {a, 64, memory_side::device}, true);
  model.stream_value_waited(here, {s2}, b, 4, "cuStreamWaitValue32");
  // An unfenced write releases nothing either.
  model.stream_value_written(here, {s1}, b, 4, false, "cuStreamWriteValue32");
  model.stream_value_waited(here, {s2}, b, 4, "cuStreamWaitValue32");
  EXPECT_EQ(unmodelled(), (strings{"cuStreamWaitValue32 (release not seen)",
                                   "cuStreamWaitValue32 (release not seen)"}));
  read_on_s2(a);
  EXPECT_EQ(kinds(), strings{"stream-race"});
}

TEST_F(GraphEdits, AWriteValueWritesItsWordOnItsStream) {
  model.stream_value_written(here, {s1}, c + 8, 4, true, "cuStreamWriteValue32");
  const auto& k = sink.last<kernel_launch>();
  EXPECT_EQ(sink.tables.string(std::get<kernel_launch>(k.body).kernel), "cuStreamWriteValue32");
  ASSERT_EQ(k.accesses.size(), 1u);
  EXPECT_EQ(k.accesses[0].range.offset, 8u);
  EXPECT_EQ(k.accesses[0].range.size, 4u);
  EXPECT_EQ(k.accesses[0].mode, access_mode::write);
  // A copy on another stream reads the word the write wrote.
  model.copied(here, {s2}, {a, 64, memory_side::device}, {c, 64, memory_side::device}, true);
  EXPECT_EQ(kinds(), strings{"stream-race"});
}

}  // namespace
}  // namespace streamsan::injection
