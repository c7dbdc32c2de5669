// Graph memory nodes in the model: which allocation each alloc and free node
// names, and what the addresses name before and after each launch.
//
// Note [Graph allocations] (sanitizer/engine/graph_rules.cpp) says what the
// engine checks. The model's part:
// - Allocation ids are the alloc node's: at instantiation each alloc node
//   (read with cuGraphMemAllocNodeGetParams: address, size, device) gets an
//   id, declared by an alloc_record of kind stream_ordered without a stream,
//   the first time its graph is instantiated. The address is fixed for the
//   node's lifetime, so the id stays the same for every launch, and for a
//   later instantiation of the same graph (the node is known by its handle
//   and graph until the graph is destroyed; "only one instantiation of the
//   graph may exist at any point in time"); it is never looked up by
//   address: the map only answers which id an address names now.
// - A graph may hand one address to two of its allocations (the second
//   allocated after the first is freed, as the driver does when the free
//   node precedes the second alloc node). The map then names one of them;
//   an access of a node to such an address is renamed to the allocation
//   whose alloc node is the latest of those that precede the node, and a
//   free node frees the latest allocation at its address that precedes it.
// - A free node frees the graph's own allocation at its address, else
//   whatever the address names at instantiation (an allocation of another
//   graph, left live after its launch). One whose address names nothing
//   then (its allocating graph is instantiated later) frees, at each
//   launch, what the address names at that launch, as a cudaFreeAsync on
//   the launch stream right after it; one whose address names nothing even
//   then is listed (`cudaGraphLaunch (memory free node of unknown memory)`).
// - Until a launch, the graph's allocations are unborn: the addresses name
//   them in the freed history, so an access before the first launch is
//   reported against them. After each launch the graph's allocations that
//   it does not free are live in the map (until a cudaFree, cudaFreeAsync or
//   another graph's free node), those it frees are in the freed history
//   (an access after the launch is a use after free), and the allocations
//   of others that it frees leave the map.
// - cudaMallocAsync and cudaFreeAsync on a capturing stream add alloc and
//   free nodes to the graph being captured and allocate or free nothing
//   now: the model logs nothing for them and reads the nodes at
//   instantiation like any other.
#include <algorithm>
#include <deque>

#include "inject/model/cuda_model.h"

namespace streamsan::injection {
namespace {

// Which nodes of a raw graph precede which (a path of edges), by one
// breadth-first search per source asked about.
class node_order {
 public:
  node_order(std::size_t count, const std::vector<std::pair<std::uint32_t, std::uint32_t>>& edges)
      : next_(count), reach_(count) {
    for (const auto& [from, to] : edges) {
      if (from < count && to < count) next_[from].push_back(to);
    }
  }
  bool reaches(std::uint32_t from, std::uint32_t to) {
    if (from >= next_.size() || to >= next_.size()) return false;
    std::vector<bool>& seen = reach_[from];
    if (seen.empty()) {
      seen.assign(next_.size(), false);
      std::deque<std::uint32_t> frontier{from};
      while (!frontier.empty()) {
        const std::uint32_t n = frontier.front();
        frontier.pop_front();
        for (const std::uint32_t m : next_[n]) {
          if (!seen[m]) {
            seen[m] = true;
            frontier.push_back(m);
          }
        }
      }
    }
    return seen[to];
  }

 private:
  std::vector<std::vector<std::uint32_t>> next_;
  std::vector<std::vector<bool>> reach_;
};

bool contains(std::uint64_t base, std::uint64_t size, std::uint64_t address) {
  return address == base || address - base < size;
}

// Of the alloc nodes `candidates` (node indices), the latest that precedes
// `node`; nullopt when none does.
std::optional<std::size_t> latest_before(std::span<const std::uint32_t> alloc_nodes,
                                         std::span<const std::size_t> candidates,
                                         std::uint32_t node, node_order& order) {
  std::optional<std::size_t> best;
  for (const std::size_t c : candidates) {
    if (!order.reaches(alloc_nodes[c], node)) continue;
    if (!best || order.reaches(alloc_nodes[*best], alloc_nodes[c])) best = c;
  }
  return best;
}

// The allocations of `made` that hold `address`, by index.
template <class Made>
std::vector<std::size_t> holding(const std::vector<Made>& made, std::uint64_t address) {
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < made.size(); ++k) {
    if (contains(made[k].base, made[k].size, address)) out.push_back(k);
  }
  return out;
}

// Whether two of the allocations overlap (the driver handed an address out
// twice in one graph).
template <class Made>
bool shares_an_address(const std::vector<Made>& made) {
  for (std::size_t a = 0; a < made.size(); ++a) {
    for (std::size_t b = a + 1; b < made.size(); ++b) {
      if (contains(made[a].base, made[a].size, made[b].base) ||
          contains(made[b].base, made[b].size, made[a].base)) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

bool cuda_model::captures(const stream_ref& s) {
  if (!any_capture_active()) return false;
  return driver_.capture_frontier_of(s.handle).has_value();
}

alloc_id cuda_model::alloc_node_allocation_locked(const call_site& at, const raw_graph_node& n,
                                                  std::uintptr_t graph) {
  const auto key = std::make_pair(n.owner != 0 ? n.owner : graph, n.handle);
  if (const auto it = alloc_nodes_.find(key); n.handle != 0 && it != alloc_nodes_.end() &&
                                              it->second.base == n.dst.address &&
                                              it->second.size == n.dst.size) {
    return it->second.id;  // the graph instantiated again
  }
  const alloc_id id = rec_.new_alloc_id();
  alloc_record r;
  r.alloc = id;
  r.kind = memory_kind::stream_ordered;  // no stream: a graph's (Note [Graph allocations])
  r.device = n.device;
  r.size = n.dst.size;
  r.address = n.dst.address;
  emit(at, r);
  if (n.handle != 0) {
    alloc_nodes_[key] = graph_allocation{id, n.dst.address, n.dst.size, n.device, false};
  }
  return id;
}

std::vector<alloc_id> cuda_model::bind_graph_memory_locked(const call_site& at, const raw_graph& g,
                                                           std::uintptr_t graph,
                                                           graph_memory& memory) {
  std::vector<alloc_id> node_memory(g.nodes.size());
  std::vector<std::uint32_t> alloc_nodes;  // by index into memory.made
  for (std::uint32_t i = 0; i < g.nodes.size(); ++i) {
    const raw_graph_node& n = g.nodes[i];
    if (n.kind != raw_node_kind::mem_alloc) continue;
    const alloc_id id = alloc_node_allocation_locked(at, n, graph);
    allocations_.insert(allocation{id, n.dst.address, n.dst.size, memory_kind::stream_ordered,
                                   n.device});
    memory.made.push_back(graph_allocation{id, n.dst.address, n.dst.size, n.device, false});
    alloc_nodes.push_back(i);
    node_memory[i] = id;
  }
  node_order order(g.nodes.size(), g.edges);
  for (std::uint32_t i = 0; i < g.nodes.size(); ++i) {
    const raw_graph_node& n = g.nodes[i];
    if (n.kind != raw_node_kind::mem_free) continue;
    const std::vector<std::size_t> here = holding(memory.made, n.dst.address);
    if (!here.empty()) {
      // A free node not after its alloc node (a graph the driver would
      // refuse) frees the first allocation at the address.
      const std::size_t k = latest_before(alloc_nodes, here, i, order).value_or(here.front());
      memory.made[k].freed_inside = true;
      node_memory[i] = memory.made[k].id;
    } else if (const auto hit = allocations_.find(n.dst.address)) {
      memory.freed.emplace_back(hit->block.base, hit->block.id);
      node_memory[i] = hit->block.id;
    } else {
      memory.freed_by_address.push_back(n.dst.address);
    }
  }
  std::stable_partition(memory.made.begin(), memory.made.end(),
                        [](const graph_allocation& a) { return a.freed_inside; });
  return node_memory;
}

void cuda_model::finish_graph_memory_locked(const raw_graph& g,
                                            std::span<const alloc_id> node_memory,
                                            const graph_memory& memory, exec_graph& out) {
  for (std::size_t i = 0; i < out.nodes.size() && i < node_memory.size(); ++i) {
    graph_node& node = out.nodes[i].node;
    if (node.kind != graph_node_kind::mem_alloc && node.kind != graph_node_kind::mem_free) continue;
    // A free node by address (none here) frees at each launch what its
    // address names then: launch_graph_memory_locked.
    node.memory = node_memory[i];
  }
  rename_shared_addresses(g, node_memory, memory, out);
  // Unborn until a launch: the addresses name them in the freed history.
  for (const graph_allocation& m : memory.made) allocations_.erase(m.base, m.id);
}

// Accesses to an address two allocations of the graph share name the one
// whose alloc node is the latest before the accessing node.
void cuda_model::rename_shared_addresses(const raw_graph& g, std::span<const alloc_id> node_memory,
                                         const graph_memory& memory, exec_graph& out) {
  if (!shares_an_address(memory.made)) return;
  std::vector<std::size_t> made_of_node(g.nodes.size(), memory.made.size());
  for (std::uint32_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].kind != raw_node_kind::mem_alloc) continue;
    for (std::size_t k = 0; k < memory.made.size(); ++k) {
      if (memory.made[k].id == node_memory[i]) made_of_node[i] = k;
    }
  }
  std::vector<std::uint32_t> node_of_made(memory.made.size());
  for (std::uint32_t i = 0; i < g.nodes.size(); ++i) {
    if (made_of_node[i] < memory.made.size()) node_of_made[made_of_node[i]] = i;
  }
  node_order order(g.nodes.size(), g.edges);
  // The access renamed to the allocation node n runs within, if another.
  const auto rename = [&](const access& a, std::uint32_t n) {
    const auto named = std::find_if(memory.made.begin(), memory.made.end(),
                                    [&](const auto& m) { return m.id == a.range.alloc; });
    if (named == memory.made.end()) return a;
    const std::uint64_t address = named->base + a.range.offset;
    const auto k = latest_before(node_of_made, holding(memory.made, address), n, order);
    if (!k) return a;
    const graph_allocation& to = memory.made[*k];
    const std::uint64_t offset = address - to.base;
    const std::uint64_t room = to.size > offset ? to.size - offset : 0;
    access moved = a;
    moved.range = byte_range{
        to.id, offset, a.origin == access_origin::inferred ? room : std::min(a.range.size, room)};
    return moved;
  };
  for (std::uint32_t n = 0; n < out.nodes.size(); ++n) {
    std::vector<access> renamed;
    for (const access& a : out.nodes[n].accesses) add_access(renamed, rename(a, n));
    out.nodes[n].accesses = std::move(renamed);
  }
}

void cuda_model::launch_graph_memory_locked(const call_site& at, stream_id stream,
                                            const graph_memory& memory) {
  // Those freed inside first: the graph's live allocations then win an
  // address the two share.
  for (const graph_allocation& m : memory.made) {
    allocations_.insert(allocation{m.id, m.base, m.size, memory_kind::stream_ordered, m.device});
    if (m.freed_inside) allocations_.erase(m.base, m.id);
  }
  for (const auto& [base, id] : memory.freed) allocations_.erase(base, id);
  for (const std::uint64_t address : memory.freed_by_address) {
    if (const auto a = allocations_.erase(address)) {
      emit(at, free_record{a->id, free_mode::stream_ordered, stream});
    } else {
      // Never silently dropped: a free of memory the model does not know.
      emit(at,
           unmodelled_call{rec_.intern("cudaGraphLaunch (memory free node of unknown memory)")});
    }
  }
}

}  // namespace streamsan::injection
