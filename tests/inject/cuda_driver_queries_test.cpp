// cuda_driver_queries over the fake driver (fake_cuda_driver.cpp, loaded as
// libcuda.so.1): what a graph's description holds, child graphs flattened.
#include "inject/driver/cuda_driver_queries.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "tests/inject/fake_cuda_driver.h"

namespace streamsan::injection {
namespace {

std::uintptr_t handle(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// One instance for the whole process, as the library has: its resolved
// entry points live as long as the process (cuda_driver_queries::resolve).
cuda_driver_queries& driver_queries_of_the_process() {
  static auto* queries = new cuda_driver_queries;
  return *queries;
}

bool has_edge(const raw_graph& g, std::uint32_t from, std::uint32_t to) {
  return std::find(g.edges.begin(), g.edges.end(), std::pair{from, to}) != g.edges.end();
}

TEST(CudaDriverQueries, DescribesKernelAndMemsetNodesWithTheirEdges) {
  const CUgraph graph = fake_cuda_graph_create();
  const CUgraphNode fill = fake_cuda_graph_add(graph, CU_GRAPH_NODE_TYPE_MEMSET, nullptr, 0);
  CUDA_MEMSET_NODE_PARAMS m{};
  m.dst = 0x7000'0000;
  m.elementSize = 4;
  m.width = 64;
  m.height = 1;
  fake_cuda_graph_set_memset(fill, &m);
  const CUgraphNode kernel = fake_cuda_graph_add(graph, CU_GRAPH_NODE_TYPE_KERNEL, &fill, 1);
  const auto function = reinterpret_cast<CUfunction>(0xf00);
  fake_cuda_graph_set_kernel(kernel, function);

  cuda_driver_queries& queries = driver_queries_of_the_process();
  const auto g = queries.describe_graph(handle(graph));
  ASSERT_TRUE(g.has_value());
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[0].kind, raw_node_kind::memset);
  EXPECT_EQ(g->nodes[0].handle, handle(fill));
  EXPECT_EQ(g->nodes[0].owner, handle(graph));
  EXPECT_EQ(g->nodes[0].dst.address, 0x7000'0000u);
  EXPECT_EQ(g->nodes[0].dst.size, 256u);
  EXPECT_EQ(g->nodes[1].kind, raw_node_kind::kernel);
  EXPECT_EQ(g->nodes[1].kernel, handle(function));
  EXPECT_EQ(g->edges, (std::vector<std::pair<std::uint32_t, std::uint32_t>>{{0, 1}}));
}

// Note [Programmatic dependent launch] (launch_handlers.cpp): a
// programmatic edge (XLA's command buffers) is read as a full dependency.
// Listed without edge data, the driver refuses them (CUDA_ERROR_LOSSY_QUERY),
// which had left the whole graph unread.
TEST(CudaDriverQueries, ProgrammaticEdgesAreReadAsDependencies) {
  const CUgraph graph = fake_cuda_graph_create();
  const CUgraphNode first = fake_cuda_graph_add(graph, CU_GRAPH_NODE_TYPE_KERNEL, nullptr, 0);
  fake_cuda_graph_set_kernel(first, reinterpret_cast<CUfunction>(0xf00));
  const CUgraphNode second = fake_cuda_graph_add(graph, CU_GRAPH_NODE_TYPE_KERNEL, &first, 1);
  fake_cuda_graph_set_kernel(second, reinterpret_cast<CUfunction>(0xf00));
  fake_cuda_graph_mark_edges_programmatic(graph);

  cuda_driver_queries& queries = driver_queries_of_the_process();
  const auto g = queries.describe_graph(handle(graph));
  ASSERT_TRUE(g.has_value()) << queries.graph_read_failure();
  EXPECT_EQ(g->edges, (std::vector<std::pair<std::uint32_t, std::uint32_t>>{{0, 1}}));
}

TEST(CudaDriverQueries, FlattensAChildGraphBetweenAnEntryAndAnExitNode) {
  const CUgraph child = fake_cuda_graph_create();
  const CUgraphNode x = fake_cuda_graph_add(child, CU_GRAPH_NODE_TYPE_KERNEL, nullptr, 0);
  const CUgraphNode y = fake_cuda_graph_add(child, CU_GRAPH_NODE_TYPE_EMPTY, &x, 1);
  const CUgraph parent = fake_cuda_graph_create();
  const CUgraphNode a = fake_cuda_graph_add(parent, CU_GRAPH_NODE_TYPE_KERNEL, nullptr, 0);
  const CUgraphNode c = fake_cuda_graph_add(parent, CU_GRAPH_NODE_TYPE_GRAPH, &a, 1);
  fake_cuda_graph_set_child(c, child);
  const CUgraphNode b = fake_cuda_graph_add(parent, CU_GRAPH_NODE_TYPE_KERNEL, &c, 1);

  cuda_driver_queries& queries = driver_queries_of_the_process();
  const auto g = queries.describe_graph(handle(parent));
  ASSERT_TRUE(g.has_value());
  // a, c's entry, x, y, c's exit, b.
  ASSERT_EQ(g->nodes.size(), 6u);
  EXPECT_EQ(g->nodes[0].handle, handle(a));
  EXPECT_EQ(g->nodes[1].handle, handle(c));
  EXPECT_EQ(g->nodes[1].kind, raw_node_kind::empty);
  EXPECT_EQ(g->nodes[2].handle, handle(x));
  EXPECT_EQ(g->nodes[2].owner, handle(child));
  EXPECT_EQ(g->nodes[3].handle, handle(y));
  EXPECT_EQ(g->nodes[4].kind, raw_node_kind::empty);
  EXPECT_EQ(g->nodes[4].handle, 0u);
  EXPECT_EQ(g->nodes[5].handle, handle(b));
  EXPECT_TRUE(has_edge(*g, 1, 2));  // entry -> each child node
  EXPECT_TRUE(has_edge(*g, 1, 3));
  EXPECT_TRUE(has_edge(*g, 2, 4));  // each child node -> exit
  EXPECT_TRUE(has_edge(*g, 3, 4));
  EXPECT_TRUE(has_edge(*g, 2, 3));  // the child's own edge
  EXPECT_TRUE(has_edge(*g, 0, 1));  // a -> c arrives at the entry
  EXPECT_TRUE(has_edge(*g, 4, 5));  // c -> b leaves from the exit
  EXPECT_EQ(g->edges.size(), 7u);
}

TEST(CudaDriverQueries, AChildGraphTheDriverDoesNotGiveIsItsEntryNodeAlone) {
  const CUgraph parent = fake_cuda_graph_create();
  const CUgraphNode c = fake_cuda_graph_add(parent, CU_GRAPH_NODE_TYPE_GRAPH, nullptr, 0);
  const CUgraphNode b = fake_cuda_graph_add(parent, CU_GRAPH_NODE_TYPE_EMPTY, &c, 1);

  cuda_driver_queries& queries = driver_queries_of_the_process();
  const auto g = queries.describe_graph(handle(parent));
  ASSERT_TRUE(g.has_value());
  ASSERT_EQ(g->nodes.size(), 2u);
  EXPECT_EQ(g->nodes[0].handle, handle(c));
  EXPECT_EQ(g->nodes[1].handle, handle(b));
  EXPECT_EQ(g->edges, (std::vector<std::pair<std::uint32_t, std::uint32_t>>{{0, 1}}));
}

TEST(CudaDriverQueries, AGraphTheDriverDoesNotKnowHasNoDescription) {
  cuda_driver_queries& queries = driver_queries_of_the_process();
  EXPECT_FALSE(queries.describe_graph(0x1234).has_value());
  // The report says why (CUDA_ERROR_INVALID_VALUE is 1; this fake driver
  // has no cuGetErrorName).
  EXPECT_EQ(queries.graph_read_failure(), "cuGraphGetNodes failed: an unknown error (1)");
  EXPECT_FALSE(queries.describe_graph(0).has_value());
  EXPECT_EQ(queries.graph_read_failure(), "no graph");
}

}  // namespace
}  // namespace streamsan::injection
