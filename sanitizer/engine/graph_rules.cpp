// Stream capture, graph instantiation and graph launches.
//
// Note [Capture records, it does not execute]
// S-GRAPH-1: while a stream is capturing, work issued to it is recorded
// into a graph and does not run. Operations on a capturing stream therefore
// have no accesses and no ordering effects here; the graph's content arrives
// with graph_instantiate, and it runs at graph_launch. Waiting on an event
// recorded in the capture (or wait_stream on a capturing stream) forks the
// capture into the waiting stream, as CUDA does; the capture's end ends it on
// every stream it spread to. Synchronizing with captured work is illegal:
// stream synchronize/query of a capturing stream, device synchronize while a
// stream of the device captures, and event synchronize/query of an event
// recorded in a capture report sync_during_capture and order nothing.
//
// Note [A graph launch is one operation]
// S-GRAPH-2: the launch as a whole is ordered in its stream like one
// operation, so all node accesses are applied at the launch's single epoch.
// Nodes of one launch never conflict with each other here (same epoch, same
// context); the pairs that can run concurrently were reported once, at
// instantiation, as graph_node_race (Note [Graph node ordering]).
//
// Note [Graph candidates wait for a launch]
// A graph_node_race between two nodes whose footprints are exact or
// measured is reported at instantiation. One that needs an inferred
// footprint (a kernel node, Note [Candidates and confirmed diagnostics]) is
// held with the graph until its next graph_launch and reported there: the
// model logs the graph again, under the same id, before a launch whose
// kernel nodes were measured (inject/model, Note [Measuring graph kernel
// nodes]), and that graph_instantiate replaces what the earlier one held.
// So the candidates that reach the log are those of the graph as it ran: a
// pair the measured nodes show racing is reported confirmed (and confirms a
// candidate an earlier launch left at the same call sites), a pair whose
// measured footprints do not overlap is never reported, and the pairs that
// still rest on an inferred footprint are candidates of that launch. An
// edit's graph_instantiate (Note [Editing an instantiated graph]) replaces
// them too: launches after it run the edited graph. A graph never launched
// after its last graph_instantiate reports no candidates: it ran nothing.
//
// Note [Graph allocations]
// A graph memory node (cudaGraphAddMemAllocNode / cudaGraphAddMemFreeNode,
// or cudaMallocAsync / cudaFreeAsync captured into a graph) allocates or
// frees a graph allocation. Its virtual address is fixed when the node is
// made, but its lifetime follows GPU execution: it begins each time a launch
// reaches the alloc node and ends when execution reaches the graph's free
// node, a cudaFreeAsync, a free node of another graph, or at a cudaFree
// ([guide: graph memory nodes]). Work that accesses it must be ordered after
// the alloc node and before the free (S-MEM-5's rule for stream-ordered
// memory, inside the graph and outside it). The log declares one with an
// alloc_record of kind stream_ordered and no stream (the model makes one per
// alloc node, never per address: inject/model/cuda_model_graph_memory.cpp),
// and mem_alloc / mem_free nodes name it (graph_node::memory):
// - Inside the graph, checked once at instantiation like node races (Note
//   [Graph node ordering]): a node that accesses the allocation and is not
//   reached from its alloc node is use_before_alloc; one that does not reach
//   the graph's free node of it is use_after_free when the free node reaches
//   it, free_while_in_use when the two are unordered.
// - Until a launch has allocated it, the allocation is unborn: it counts as
//   freed, and a use is reported as use_before_alloc against the alloc node
//   (whose creation is then where the memory was allocated).
// - A launch is one operation of its stream (Note [A graph launch is one
//   operation]): its alloc nodes allocate first (the allocation's creation is
//   the launch: work outside the graph must be ordered after the launch),
//   then the nodes' accesses apply, then its free nodes free, as a
//   cudaFreeAsync on the launch stream would: outside work not ordered
//   before the launch is free_while_in_use, work after it use_after_free. An
//   allocation the graph does not free stays live after the launch until a
//   later free (cudaFree of it does not synchronize, as for cudaMallocAsync
//   memory: Note [Calls that do not synchronize]).
// - Each launch allocates anew under the same id (same node, same address,
//   new contents): live again, history empty. A launch that finds it still
//   live (the driver refuses that launch unless the graph was instantiated
//   with cudaGraphInstantiateFlagAutoFreeOnLaunch) frees it first, on the
//   launch stream. Graph allocations are never forgotten, like the graphs
//   that allocate them.
// Missed: outside work is ordered against the whole launch, not against the
// alloc or free node inside it, so work ordered after a launch counts as
// after its alloc nodes, and work before it as before its free nodes.
#include <algorithm>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "sanitizer/engine/engine_impl.h"
#include "sanitizer/engine/graph_conflicts.h"
#include "sanitizer/engine/graph_reachability.h"

namespace streamsan {
namespace {

constexpr std::size_t max_dependencies_shown = 8;

std::vector<graph_node_ref> dependencies_of(std::uint32_t node, const graph_instantiate& r) {
  std::vector<graph_node_ref> out;
  for (const graph_edge& e : r.edges) {
    if (e.to != node || e.from >= r.nodes.size()) continue;
    if (out.size() == max_dependencies_shown) break;
    out.push_back({e.from, r.nodes[e.from].name});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  return out;
}

// Note [Race timelines] for a graph: the two nodes and, up to `limit`
// nodes, their neighbours by dependency edges, nearest first; the edges
// among them are the ones that exist.
std::shared_ptr<race_timeline> graph_timeline(const graph_instantiate& r, const record_header& h,
                                              std::uint32_t previous, std::uint32_t current,
                                              std::size_t limit) {
  std::unordered_set<std::uint32_t> kept{previous, current};
  std::deque<std::uint32_t> frontier{previous, current};
  while (!frontier.empty() && kept.size() < limit) {
    const std::uint32_t n = frontier.front();
    frontier.pop_front();
    for (const graph_edge& e : r.edges) {
      if (kept.size() >= limit) break;
      if (e.from >= r.nodes.size() || e.to >= r.nodes.size()) continue;
      const std::uint32_t other = e.from == n ? e.to : e.to == n ? e.from : n;
      if (other != n && kept.insert(other).second) frontier.push_back(other);
    }
  }
  std::vector<std::uint32_t> nodes(kept.begin(), kept.end());
  std::sort(nodes.begin(), nodes.end());
  auto timeline = std::make_shared<race_timeline>();
  timeline->graph = true;
  std::vector<std::uint32_t> position(r.nodes.size(), ~0u);
  for (const std::uint32_t n : nodes) {
    position[n] = static_cast<std::uint32_t>(timeline->ops.size());
    timeline_op o;
    o.seq = h.seq;
    o.op = operation_kind::graph_node;
    o.context = context_kind::stream;
    o.thread = h.thread;
    o.name = r.nodes[n].name;
    o.stack = is_none(r.nodes[n].stack) ? h.stack : r.nodes[n].stack;
    o.graph = r.graph;
    o.graph_node = n;
    timeline->ops.push_back(o);
  }
  for (const graph_edge& e : r.edges) {
    if (e.from >= r.nodes.size() || e.to >= r.nodes.size()) continue;
    if (position[e.from] == ~0u || position[e.to] == ~0u) continue;
    timeline->edges.push_back({position[e.from], position[e.to], timeline_edge_kind::graph_dependency});
  }
  timeline->previous = position[previous];
  timeline->current = position[current];
  return timeline;
}

}  // namespace

void engine_impl::start_capture(stream_state& s, graph_id graph) {
  s.capturing = true;
  s.capture_graph = graph;
  ++s.device->capturing;
  capturing_.push_back(&s);
}

bool engine_impl::begin_capture(stream_state& s, graph_id graph) {
  const bool active = std::any_of(capturing_.begin(), capturing_.end(), [&](const stream_state* c) {
    return c->capture_graph == graph;
  });
  if (active && !s.capturing) start_capture(s, graph);
  return active;
}

void engine_impl::on(const record_header& h, const graph_capture_begin& r) {
  thread_state& t = thread_of(h);
  stream_state& s = stream_for(h, t, r.stream, operation_kind::graph_launch);
  if (s.destroyed) return;
  if (s.capturing) {
    ++stats_.ignored_records;  // captures do not nest
    return;
  }
  start_capture(s, r.graph);
}

void engine_impl::on(const record_header& h, const graph_capture_end& r) {
  thread_state& t = thread_of(h);
  stream_state& s = stream_for(h, t, r.stream, operation_kind::graph_launch);
  if (!s.capturing) {
    ++stats_.ignored_records;
    return;
  }
  const graph_id graph = s.capture_graph;
  std::erase_if(capturing_, [&](stream_state* c) {
    if (c->capture_graph != graph) return false;
    c->capturing = false;
    c->capture_graph = graph_id{};
    --c->device->capturing;
    return true;
  });
}

// One stream leaves its capture (a destroyed stream that is forgotten).
void engine_impl::end_capture(stream_state& s) {
  if (!s.capturing) return;
  s.capturing = false;
  s.capture_graph = graph_id{};
  --s.device->capturing;
  std::erase(capturing_, &s);
}

void engine_impl::on(const record_header& h, const graph_instantiate& r) {
  thread_state& t = thread_of(h);
  stored_graph& g = graphs_.get_or_insert(r.graph);
  g.nodes.clear();
  g.nodes.reserve(r.nodes.size());
  g.memory_nodes = false;
  g.held_candidates.clear();  // the graph those were found in never ran
  for (const graph_node& n : r.nodes) {
    g.nodes.push_back(stored_graph_node{n.kind, n.name, {n.accesses.begin(), n.accesses.end()},
                                        n.stack, n.memory});
    g.memory_nodes |= n.kind == graph_node_kind::mem_alloc || n.kind == graph_node_kind::mem_free;
  }

  graph_reachability order(r.nodes.size(), r.edges);
  stats_.ignored_records += order.bad_edges() > 0 ? 1 : 0;
  if (g.memory_nodes) check_graph_lifetimes(h, r, order);
  const auto resolve = [&](const access& a) -> std::optional<root_range> {
    if (is_none(a.range.alloc)) return std::nullopt;
    const allocation* al = allocations_.find(a.range.alloc);
    if (al == nullptr) return std::nullopt;
    const std::uint64_t begin = al->root_offset + a.range.offset;
    const std::uint64_t end = begin + a.range.size < begin ? ~std::uint64_t{0} : begin + a.range.size;
    return root_range{raw(al->root->ref.id), begin, end};
  };
  const string_id nvtx = t.nvtx.empty() ? string_id{} : t.nvtx.back();
  const auto node_ref = [&](std::uint32_t node, const graph_side& side) {
    operation_ref o;
    o.seq = h.seq;
    o.op = operation_kind::graph_node;
    o.context = context_kind::stream;  // a node runs on the device; no stream yet
    o.thread = h.thread;
    o.name = r.nodes[node].name;
    o.mode = side.mode;
    o.origin = side.origin;
    o.offset = side.offset;
    o.size = side.size;
    // Where the node was added or captured; the instantiation when unknown.
    o.stack = is_none(r.nodes[node].stack) ? h.stack : r.nodes[node].stack;
    o.nvtx_range = nvtx;
    o.graph = r.graph;
    o.graph_node = node;
    o.alloc = side.alloc;
    return o;
  };
  for (graph_conflict& c : find_graph_conflicts(r.nodes, order, resolve)) {
    const allocation& a = *allocations_.find(c.current.alloc);
    pending_diagnostic p;
    p.d.kind = diagnostic_kind::graph_node_race;
    p.d.hazard_kind = c.kind;
    p.d.current = node_ref(c.current_node, c.current);
    p.d.previous = node_ref(c.previous_node, c.previous);
    p.d.allocation = a.ref;
    p.root_offset = a.root_offset;
    for (const auto& [begin, end] : c.ranges) p.add_piece(begin, end);
    set_conflict_ranges(p);
    const auto enrich = [&](diagnostic& fresh) {
      graph_gap gap;
      gap.instantiated = h.stack;
      gap.node_count = static_cast<std::uint32_t>(r.nodes.size());
      gap.previous_depends_on = dependencies_of(c.previous_node, r);
      gap.current_depends_on = dependencies_of(c.current_node, r);
      fresh.graph = std::move(gap);
      if (window_ && timelines_kept_ < options_.timeline_races) {
        fresh.timeline =
            graph_timeline(r, h, c.previous_node, c.current_node, options_.timeline_ops);
        ++timelines_kept_;
      }
    };
    // Note [Graph candidates wait for a launch]
    if (certainty_of(p.d.current, &*p.d.previous) == diagnostic_certainty::candidate) {
      enrich(p.d);
      g.held_candidates.push_back(std::move(p.d));
      continue;
    }
    emit(p.d, enrich);
  }
}

void engine_impl::on(const record_header& h, const graph_launch& r) {
  thread_state& t = thread_of(h);
  stream_state& s = stream_for(h, t, r.stream, operation_kind::graph_launch);
  stored_graph* const g = graphs_.find(r.graph);
  if (g != nullptr && !g->held_candidates.empty()) [[unlikely]] {
    // Note [Graph candidates wait for a launch]
    for (const diagnostic& d : std::exchange(g->held_candidates, {})) emit(d);
  }
  if (s.destroyed) return;  // Note [Work on a destroyed stream]
  if (s.capturing) {
    if (g != nullptr) {
      for (const auto& n : g->nodes) stats_.accesses_captured += n.accesses.size();
    }
    return;
  }
  const epoch when = enqueue(t, s);
  if (window_) [[unlikely]] window_stream_op(h, t, s, operation_kind::graph_launch, {});
  if (g == nullptr) {
    ++stats_.unknown_graph_launches;
    return;
  }
  if (g->memory_nodes) [[unlikely]] {
    run_graph_memory(h, t, s, r.graph, *g, when, graph_node_kind::mem_alloc);
  }
  for (std::uint32_t i = 0; i < g->nodes.size(); ++i) {
    const stored_graph_node& node = g->nodes[i];
    access_entry entry = entry_for(h, t, when, operation_kind::graph_node, node.name);
    entry.graph = r.graph;
    entry.graph_node = i;
    apply_accesses(node.accesses, entry, *s.context);
  }
  if (g->memory_nodes) [[unlikely]] {
    run_graph_memory(h, t, s, r.graph, *g, when, graph_node_kind::mem_free);
  }
}

// ---- Note [Graph allocations] ----

namespace {

// The graph's alloc (or free) node of each allocation it makes (or frees).
std::unordered_map<std::uint32_t, std::uint32_t> memory_nodes_of(const graph_instantiate& r,
                                                                 graph_node_kind kind) {
  std::unordered_map<std::uint32_t, std::uint32_t> out;
  for (std::uint32_t i = 0; i < r.nodes.size(); ++i) {
    if (r.nodes[i].kind == kind && !is_none(r.nodes[i].memory)) {
      out.try_emplace(raw(r.nodes[i].memory), i);
    }
  }
  return out;
}

}  // namespace

void engine_impl::check_graph_lifetimes(const record_header& h, const graph_instantiate& r,
                                        graph_reachability& order) {
  const thread_state& t = thread_of(h);
  const auto allocs = memory_nodes_of(r, graph_node_kind::mem_alloc);
  const auto frees = memory_nodes_of(r, graph_node_kind::mem_free);
  // The unborn allocation's creation is its alloc node (for reports).
  for (const auto& [memory, node] : allocs) {
    allocation* a = allocations_.find(alloc_id{memory});
    if (a == nullptr || !a->unborn) continue;
    a->set_created(entry_for(h, t, epoch{}, operation_kind::graph_node, r.nodes[node].name));
    a->created.graph = r.graph;
    a->created.graph_node = node;
    if (!is_none(r.nodes[node].stack)) {
      // Where the node was added (or its cudaMallocAsync captured).
      a->created.stack = r.nodes[node].stack;
      a->ref.site = r.nodes[node].stack;
    }
  }
  // A node's side of a report: its access, or (a memory node) no range.
  const auto side = [&](std::uint32_t node, const access* a) {
    access_entry e = entry_for(h, t, epoch{}, operation_kind::graph_node, r.nodes[node].name);
    e.graph = r.graph;
    e.graph_node = node;
    if (!is_none(r.nodes[node].stack)) e.stack = r.nodes[node].stack;
    e.mode = access_mode::write;
    if (a == nullptr) return e;
    e.alloc = a->range.alloc;
    e.offset = a->range.offset;
    e.size = a->range.size;
    e.mode = a->mode;
    e.origin = a->origin;
    return e;
  };
  for (std::uint32_t n = 0; n < r.nodes.size(); ++n) {
    for (const access& a : r.nodes[n].accesses) {
      const allocation* al = allocations_.find(a.range.alloc);
      if (al == nullptr) continue;
      diagnostic d;
      if (const auto made = allocs.find(raw(a.range.alloc));
          made != allocs.end() && !order.reaches(made->second, n)) {
        d.kind = diagnostic_kind::use_before_alloc;
        d.current = ref_of(side(n, &a));
        d.previous = ref_of(side(made->second, nullptr));
      } else if (const auto freed = frees.find(raw(a.range.alloc));
                 freed != frees.end() && !order.reaches(n, freed->second)) {
        const bool after = order.reaches(freed->second, n);
        d.kind = after ? diagnostic_kind::use_after_free : diagnostic_kind::free_while_in_use;
        d.current = ref_of(after ? side(n, &a) : side(freed->second, nullptr));
        d.previous = ref_of(after ? side(freed->second, nullptr) : side(n, &a));
        if (!after) d.hazard_kind = hazard_between(access_mode::write, a.mode);
      } else {
        continue;
      }
      d.allocation = al->ref;
      d.overlap_offset = a.range.offset;
      d.overlap_size = a.range.size;
      emit(d);
    }
  }
}

access_entry engine_impl::graph_node_entry(const record_header& h, const thread_state& t,
                                           epoch when, graph_id graph, std::uint32_t index,
                                           const stored_graph_node& node) const {
  // No byte range: reports name the node, not an access of it.
  access_entry e = entry_for(h, t, when, operation_kind::graph_node, node.name);
  e.graph = graph;
  e.graph_node = index;
  e.mode = access_mode::write;
  return e;
}

// The launch's alloc nodes (kind mem_alloc) or free nodes (mem_free).
void engine_impl::run_graph_memory(const record_header& h, thread_state& t, stream_state& s,
                                   graph_id graph, const stored_graph& g, epoch when,
                                   graph_node_kind kind) {
  for (std::uint32_t i = 0; i < g.nodes.size(); ++i) {
    const stored_graph_node& node = g.nodes[i];
    // A free node without an allocation frees by address: the model logs
    // that free itself, at each launch.
    if (node.kind != kind || is_none(node.memory)) continue;
    allocation* a = allocations_.find(node.memory);
    if (a == nullptr) {
      ++(kind == graph_node_kind::mem_alloc ? stats_.accesses_unknown_alloc : stats_.unknown_frees);
      continue;
    }
    const access_entry op = graph_node_entry(h, t, when, graph, i, node);
    if (kind == graph_node_kind::mem_alloc) {
      if (!a->freed) {
        // Still live from an earlier launch: freed on launch.
        check_free(*a, op, *s.context);
        allocations_.mark_freed(*a, false);
      }
      allocations_.revive(*a);
      a->set_created(op);
    } else if (a->freed || a->root->freed) {
      report_use_after_free(*a, op);  // freed twice, or never allocated
    } else {
      check_free(*a, op, *s.context);
      a->free_op = op;
      a->free_context = context_kind::stream;
      a->free_stream = s.id;
      allocations_.mark_freed(*a, false);
    }
  }
}

}  // namespace streamsan
