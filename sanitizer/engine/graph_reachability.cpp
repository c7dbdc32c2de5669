#include "sanitizer/engine/graph_reachability.h"

namespace streamsan {

graph_reachability::graph_reachability(std::size_t node_count,
                                       std::span<const graph_edge> edges)
    : node_count_(node_count), first_(node_count + 1, 0), reach_(node_count) {
  for (const auto& e : edges) {
    if (e.from >= node_count || e.to >= node_count) {
      ++bad_edges_;
      continue;
    }
    ++first_[e.from + 1];
  }
  for (std::size_t n = 0; n < node_count; ++n) first_[n + 1] += first_[n];
  next_.resize(first_[node_count]);
  std::vector<std::uint32_t> fill(first_.begin(), first_.end() - 1);
  for (const auto& e : edges) {
    if (e.from >= node_count || e.to >= node_count) continue;
    next_[fill[e.from]++] = e.to;
  }
}

const std::vector<std::uint64_t>& graph_reachability::reach_from(std::uint32_t node) {
  auto& bits = reach_[node];
  if (!bits.empty()) return bits;
  bits.assign((node_count_ + 63) / 64 + 1, 0);  // +1: never empty once computed
  std::vector<std::uint32_t> queue;
  const auto visit_successors = [&](std::uint32_t n) {
    for (std::uint32_t i = first_[n]; i < first_[n + 1]; ++i) {
      const std::uint32_t s = next_[i];
      std::uint64_t& word = bits[s / 64];
      const std::uint64_t bit = std::uint64_t{1} << (s % 64);
      if ((word & bit) == 0) {
        word |= bit;
        queue.push_back(s);
      }
    }
  };
  visit_successors(node);
  while (!queue.empty()) {
    const std::uint32_t n = queue.back();
    queue.pop_back();
    visit_successors(n);
  }
  return bits;
}

bool graph_reachability::reaches(std::uint32_t from, std::uint32_t to) {
  if (from >= node_count_ || to >= node_count_) return false;
  const auto& bits = reach_from(from);
  return (bits[to / 64] >> (to % 64)) & 1u;
}

}  // namespace streamsan
