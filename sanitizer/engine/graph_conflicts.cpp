#include "sanitizer/engine/graph_conflicts.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace streamsan {
namespace {

struct flat_access {
  root_range range;
  std::uint32_t node = 0;
  const access* a = nullptr;
};

graph_side side_of(const access& a) noexcept {
  return graph_side{a.range.alloc, a.mode, a.origin, a.range.offset, a.range.size};
}

std::uint64_t end_of(std::uint64_t offset, std::uint64_t size) noexcept {
  std::uint64_t end;
  return __builtin_add_overflow(offset, size, &end) ? ~std::uint64_t{0} : end;
}

void unite(graph_side& side, const access& a) noexcept {
  side.mode = side.mode | a.mode;
  const std::uint64_t begin = std::min(side.offset, a.range.offset);
  const std::uint64_t end =
      std::max(end_of(side.offset, side.size), end_of(a.range.offset, a.range.size));
  side.offset = begin;
  side.size = end - begin;
}

// What keeps two conflicts of one node pair apart.
using group_key = std::tuple<std::uint32_t, std::uint32_t, hazard, alloc_id, alloc_id,
                             access_origin, access_origin>;

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
  std::map<group_key, std::size_t> groups;
  for (std::size_t i = 0; i < flat.size(); ++i) {
    const flat_access& x = flat[i];
    // Sorted by begin: the accesses overlapping x that start at or after it
    // are the ones that follow it until one starts past its end.
    for (std::size_t j = i + 1; j < flat.size(); ++j) {
      const flat_access& y = flat[j];
      if (y.range.root != x.range.root || y.range.begin >= x.range.end) break;
      if (x.node == y.node || !conflicts(x.a->mode, y.a->mode)) continue;
      const auto lo = std::min(x.node, y.node);
      const auto hi = std::max(x.node, y.node);
      // Two bit tests once both nodes' reach is known (Note [Graph node
      // ordering]): no memo of pairs, which cost more than the tests (a
      // hash map entry per overlapping pair: 52 ms for a 1,024-node chain
      // on one buffer, bench/engine BM_GraphChainOneBuffer).
      if (order.ordered(lo, hi)) continue;
      const flat_access& prev = x.node == lo ? x : y;
      const flat_access& cur = x.node == lo ? y : x;
      const hazard kind = hazard_between(cur.a->mode, prev.a->mode);
      const group_key key{lo, hi, kind, cur.a->range.alloc, prev.a->range.alloc,
                          cur.a->origin, prev.a->origin};
      const std::pair<std::uint64_t, std::uint64_t> overlap{
          y.range.begin, std::min(x.range.end, y.range.end)};
      const auto [group, added] = groups.try_emplace(key, out.size());
      if (added) {
        graph_conflict c;
        c.previous_node = lo;
        c.current_node = hi;
        c.kind = kind;
        c.previous = side_of(*prev.a);
        c.current = side_of(*cur.a);
        c.root = x.range.root;
        c.ranges.push_back(overlap);
        out.push_back(std::move(c));
        continue;
      }
      graph_conflict& c = out[group->second];
      unite(c.previous, *prev.a);
      unite(c.current, *cur.a);
      c.ranges.push_back(overlap);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const graph_conflict& a, const graph_conflict& b) {
    return a.previous_node != b.previous_node ? a.previous_node < b.previous_node
                                              : a.current_node < b.current_node;
  });
  return out;
}

}  // namespace streamsan
