// Pairs of nodes of one graph that touch the same bytes in conflicting
// modes (Note [Atomics are their own access kind]) with no dependency path
// between them (S-GRAPH-2).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/engine/graph_reachability.h"
#include "sanitizer/log/record.h"

namespace streamsan {

// Where an access lands: the root allocation (any key that is equal for
// equal roots) and the byte range in the root's coordinates.
struct root_range {
  std::uint64_t root = 0;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

// One node's accesses that take part in a conflict, all of one allocation
// and one footprint origin: their modes united and their hull in `alloc`.
struct graph_side {
  alloc_id alloc{};
  access_mode mode = access_mode::read;
  access_origin origin = access_origin::exact;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

struct graph_conflict {
  std::uint32_t previous_node = 0;  // the lower node index
  std::uint32_t current_node = 0;
  hazard kind = hazard::none;
  graph_side previous;
  graph_side current;
  std::uint64_t root = 0;
  // The conflicting bytes in root coordinates, one entry per pair of
  // overlapping accesses (unsorted; they may overlap).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
};

// One conflict per unordered node pair, hazard, pair of allocations and
// pair of footprint origins, with every overlap that conflicts, ordered by
// node pair. `resolve` returns nullopt for accesses that are not tracked.
std::vector<graph_conflict> find_graph_conflicts(
    std::span<const graph_node> nodes, graph_reachability& order,
    const std::function<std::optional<root_range>(const access&)>& resolve);

}  // namespace streamsan
