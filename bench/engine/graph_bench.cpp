// What a graph's instantiation costs the engine, as a function of its size
// (issue #8: with --precise, every graph launch that measured kernel nodes
// logs its graph again, and the engine checks its node pairs again: Note
// [Measuring graph kernel nodes]). Each iteration feeds one graph_instantiate
// and one graph_launch of the same graph, as a measured launch does.
//
// BM_GraphChainOneBuffer/N: N kernel nodes in a chain (node i depends on
// i - 1), each reading and writing all of one 1 MiB buffer: a captured
// step that works in place. Every node pair overlaps and is ordered, the
// worst case for the pair sweep.
// BM_GraphForkOwnSlices/N: a root node, then N - 1 nodes that each depend on
// the root alone and write their own slice of one buffer: every pair is
// unordered and none overlaps.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "sanitizer/engine/engine.h"

namespace streamsan {
namespace {

constexpr std::uint64_t buffer_size = 1 << 20;
constexpr alloc_id buffer{1};
constexpr graph_id graph{1};
constexpr stream_id stream{1};

struct graph_log {
  std::vector<std::vector<access>> accesses;
  std::vector<graph_node> nodes;
  std::vector<graph_edge> edges;
};

graph_log chain_one_buffer(std::uint32_t n) {
  graph_log g;
  g.accesses.assign(n, {access{byte_range{buffer, 0, buffer_size}, access_mode::read_write,
                               access_origin::measured}});
  for (std::uint32_t i = 0; i < n; ++i) {
    g.nodes.push_back(graph_node{graph_node_kind::kernel, string_id{}, g.accesses[i]});
    if (i > 0) g.edges.push_back(graph_edge{i - 1, i});
  }
  return g;
}

graph_log fork_own_slices(std::uint32_t n) {
  graph_log g;
  const std::uint64_t slice = buffer_size / n;
  g.accesses.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    g.accesses[i] = {access{byte_range{buffer, i * slice, slice}, access_mode::write,
                            access_origin::measured}};
    g.nodes.push_back(graph_node{graph_node_kind::kernel, string_id{}, g.accesses[i]});
    if (i > 0) g.edges.push_back(graph_edge{0, i});
  }
  return g;
}

void instantiate_and_launch(benchmark::State& state, const graph_log& g) {
  engine eng;
  std::uint64_t seq = 0;
  const auto feed = [&](record_body body) {
    eng.on_record(record{{++seq, thread_id{}, stack_id{}}, body});
  };
  feed(thread_start{});
  feed(alloc_record{.alloc = buffer, .size = buffer_size});
  feed(stream_create{stream, 0, stream_flavor::non_blocking, 0});
  for (auto _ : state) {
    feed(graph_instantiate{graph, g.nodes, g.edges});
    feed(graph_launch{graph, stream});
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["nodes"] = static_cast<double>(g.nodes.size());
  state.counters["diagnostics"] = static_cast<double>(eng.diagnostics().size());
}

void BM_GraphChainOneBuffer(benchmark::State& state) {
  instantiate_and_launch(state, chain_one_buffer(static_cast<std::uint32_t>(state.range(0))));
}
BENCHMARK(BM_GraphChainOneBuffer)->RangeMultiplier(4)->Range(16, 1024)->Unit(benchmark::kMicrosecond);

void BM_GraphForkOwnSlices(benchmark::State& state) {
  instantiate_and_launch(state, fork_own_slices(static_cast<std::uint32_t>(state.range(0))));
}
BENCHMARK(BM_GraphForkOwnSlices)->RangeMultiplier(4)->Range(16, 1024)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace streamsan
