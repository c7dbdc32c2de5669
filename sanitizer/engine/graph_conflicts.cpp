#include "sanitizer/engine/graph_conflicts.h"

#include <algorithm>
#include <unordered_set>

namespace streamsan {
namespace {

struct flat_access {
  root_range range;
  std::uint32_t node = 0;
  const access* a = nullptr;
};

hazard hazard_of(access_mode current, access_mode previous) noexcept {
  if (writes(current)) {
    return writes(previous) ? hazard::write_after_write : hazard::write_after_read;
  }
  return hazard::read_after_write;
}

}  // namespace

std::vector<graph_conflict> find_graph_conflicts(
    std::span<const graph_node> nodes, graph_reachability& order,
    const std::function<std::optional<root_range>(const access&)>& resolve) {
  std::vector<flat_access> flat;
  for (std::uint32_t n = 0; n < nodes.size(); ++n) {
    for (const access& a : nodes[n].accesses) {
      if (auto r = resolve(a); r && r->begin < r->end) flat.push_back({*r, n, &a});
    }
  }
  std::sort(flat.begin(), flat.end(), [](const flat_access& x, const flat_access& y) {
    return x.range.root != y.range.root ? x.range.root < y.range.root
                                        : x.range.begin < y.range.begin;
  });

  std::vector<graph_conflict> out;
  std::unordered_set<std::uint64_t> reported;  // node pairs
  for (std::size_t i = 0; i < flat.size(); ++i) {
    const flat_access& x = flat[i];
    // Sorted by begin: the accesses overlapping x that start at or after it
    // are the ones that follow it until one starts past its end.
    for (std::size_t j = i + 1; j < flat.size(); ++j) {
      const flat_access& y = flat[j];
      if (y.range.root != x.range.root || y.range.begin >= x.range.end) break;
      if (x.node == y.node) continue;
      if (!writes(x.a->mode) && !writes(y.a->mode)) continue;
      const auto lo = std::min(x.node, y.node);
      const auto hi = std::max(x.node, y.node);
      const std::uint64_t pair = (std::uint64_t{lo} << 32) | hi;
      if (reported.contains(pair) || order.ordered(lo, hi)) continue;
      reported.insert(pair);
      const flat_access& prev = x.node == lo ? x : y;
      const flat_access& cur = x.node == lo ? y : x;
      graph_conflict c;
      c.previous_node = lo;
      c.current_node = hi;
      c.previous = prev.a;
      c.current = cur.a;
      c.overlap = root_range{x.range.root, y.range.begin, std::min(x.range.end, y.range.end)};
      c.kind = hazard_of(cur.a->mode, prev.a->mode);
      out.push_back(c);
    }
  }
  std::sort(out.begin(), out.end(), [](const graph_conflict& a, const graph_conflict& b) {
    return a.previous_node != b.previous_node ? a.previous_node < b.previous_node
                                              : a.current_node < b.current_node;
  });
  return out;
}

}  // namespace streamsan
