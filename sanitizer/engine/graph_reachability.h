// Which nodes of a CUDA graph are ordered by its dependency edges.
//
// Note [Graph node ordering]
// S-GRAPH-2: a launch runs the nodes respecting only the dependency edges;
// two nodes with no path between them may run concurrently. Ordering is the
// transitive closure of the edges. Only nodes that take part in a conflict
// are ever asked about, so reachability is computed lazily: one
// breadth-first search per source node asked about, memoized as a bitset.
// That is O(k (N + E)) for k such nodes, and needs no topological order, so a
// malformed graph with a cycle still terminates (nodes on a cycle count as
// ordered both ways). Edges naming nodes that do not exist are dropped and
// counted.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sanitizer/log/record.h"

namespace streamsan {

class graph_reachability {
 public:
  graph_reachability(std::size_t node_count, std::span<const graph_edge> edges);

  // True iff there is a path from `from` to `to` (one or more edges).
  bool reaches(std::uint32_t from, std::uint32_t to);
  bool ordered(std::uint32_t a, std::uint32_t b) { return reaches(a, b) || reaches(b, a); }

  std::size_t bad_edges() const noexcept { return bad_edges_; }

 private:
  const std::vector<std::uint64_t>& reach_from(std::uint32_t node);

  std::size_t node_count_;
  std::vector<std::uint32_t> first_;  // CSR adjacency: successors of n are
  std::vector<std::uint32_t> next_;   // next_[first_[n] .. first_[n + 1])
  std::vector<std::vector<std::uint64_t>> reach_;  // memoized bitsets, empty = not yet
  std::size_t bad_edges_ = 0;
};

}  // namespace streamsan
