// Pairs of nodes of one graph that touch the same bytes, one of them
// writing, with no dependency path between them (S-GRAPH-2).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
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

struct graph_conflict {
  std::uint32_t previous_node = 0;  // the lower node index
  std::uint32_t current_node = 0;
  const access* previous = nullptr;  // into the graph_instantiate record
  const access* current = nullptr;
  root_range overlap;
  hazard kind = hazard::none;
};

// One conflict per unordered node pair (the first overlap found, by root and
// offset). `resolve` returns nullopt for accesses that are not tracked.
std::vector<graph_conflict> find_graph_conflicts(
    std::span<const graph_node> nodes, graph_reachability& order,
    const std::function<std::optional<root_range>(const access&)>& resolve);

}  // namespace streamsan
