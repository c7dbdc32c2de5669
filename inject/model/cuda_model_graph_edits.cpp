// How the model reads a graph into the log (conditional bodies spliced in),
// and how it follows edits of an instantiated graph.
//
// Note [Editing an instantiated graph]
// An executable graph is read once, at instantiation (graph_instantiate).
// Its parameters can change afterwards without a new instantiation:
// cudaGraphExecUpdate gives it the parameters of another, topologically
// identical graph; cudaGraphExec{Kernel,Memcpy,Memset,Host}NodeSetParams and
// cudaGraphExecNodeSetParams change one node; cudaGraphNodeSetEnabled turns
// a node into an empty one and back. Each affects only the launches that
// come after it, like the engine's graph_launch, which applies the accesses
// the graph's last graph_instantiate gave. So the model keeps, per live
// exec, the nodes and edges it last logged (node parameters cannot be read
// back from an exec, and the source graph may be edited or destroyed after
// instantiation) and logs the whole graph again, under the same graph id,
// after each successful edit: later launches use the new footprint, earlier
// ones keep the old, and the pairs of nodes that may now run concurrently
// are checked again at the edit's stack. An edited node takes the edit's
// stack (its accesses come from there).
// - Nodes are named by the handle of the source graph's node. After an
//   update, the exec's nodes are paired with the new graph's in the order the
//   driver lists both (the update requires the same topology, built in the
//   same order); both handles then name the node. A node count that differs
//   (a topology the driver would have refused) keeps only the new handles.
// - A disabled node keeps its parameters (an edit of a disabled node
//   changes what it does once enabled again) and logs no accesses. An update
//   leaves the enabled state as it was: the source graph has none.
// - An edit of an exec, or of a node, the model does not know (instantiated
//   before the callbacks were on, a node of a child graph, which the driver
//   cannot address either) is listed as unmodelled and changes nothing.
//
// Note [Event nodes]
// An event record node records its event each time the graph runs, once the
// node's dependencies are done; an event wait node makes the node's
// dependents wait for the event's last record before the launch. The engine
// applies a launch's accesses at one epoch of its stream (Note [A graph
// launch is one operation]), so the model cannot place a record or a wait
// between two nodes of a launch; it puts each at the edge of the launch,
// where it orders more, never less:
// - the waits of the exec's enabled wait nodes are event_waits on the launch
//   stream right before the graph_launch, the records of its enabled record
//   nodes event_records right after it. A waiter on such an event is
//   ordered after every node of the launch, not only the record node's
//   ancestors, and every node is ordered after the waited record, not only
//   the wait node's dependents: races with the nodes outside those sets are
//   missed, and no race is invented.
// - the event comes from the driver at instantiation
//   (cuGraphEvent{Record,Wait}NodeGetEvent); a node whose event cannot be
//   read is an `other` node, listed like every node kind the model cannot
//   read. A wait node on an event never recorded is an event_wait like
//   cudaStreamWaitEvent's (S-EVENT-3 then names it).
// - cudaGraphExecEvent{Record,Wait}NodeSetEvent (and cudaGraphExecNodeSetParams
//   with an event node) are edits (Note [Editing an instantiated graph]):
//   later launches use the new event, earlier ones keep the old. The
//   setters of a graph that is not instantiated
//   (cudaGraphEventRecordNodeSetEvent, ...) are inert: the graph is read
//   when it is instantiated.
// - cudaGraphExecChildGraphNodeSetParams: Note [Child graph edits].
//
// Note [Child graph edits]
// The exec holds a child graph flattened (cuda_driver_queries): the child
// graph node becomes an empty entry node, the child's nodes follow it in
// the order the driver lists them, then an empty exit node. An edit gives
// the child node the parameters of another graph of the same topology,
// built in the same order (the driver refuses any other), so it is an
// update of that range (Note [Editing an instantiated graph]): the new
// graph is read like any graph, its nodes replace the range one for one,
// keep the old handles (and take the new ones as the update's) and the
// enabled state. The range is checked before anything changes: it must fit
// the exec, end at an exit node, and hold node for node the kinds the new
// graph reads to. A mismatch (a conditional whose bodies read to another
// size, a graph the driver reads differently) is listed as unmodelled and
// changes nothing: the footprint is never guessed.
//
// Note [Conditional nodes]
// A conditional node (cudaGraphAddNode with cudaGraphNodeTypeConditional)
// runs one of its body graphs (IF, SWITCH) or its only body again and again
// (WHILE), decided on the device when the graph runs. The driver has no call
// that reads a conditional node's bodies back; the add call returns them in
// phGraph_out, so the model keeps them by node handle (and graph, like node
// sites) and splices them in when the graph is read, recursively:
// - the conditional node becomes an empty entry node, the bodies follow it
//   one after the other (body k's nodes depend on the join after body k-1),
//   and an empty exit node, which the conditional's dependents now depend
//   on. Nodes of one body keep their own edges, so two nodes of one body that
//   are unordered race as they would in any graph.
// - Every node of every body is taken to run, each launch: its accesses are
//   applied at the launch like those of any node. A body that runs 0 times
//   in a given launch still has no ordering that would protect it if the
//   condition were true, and the condition lives on the device, out of
//   sight: the accesses are never dropped, and a race with a body node is a
//   race of the program's ordering (conservatively correct).
// - Bodies in sequence never race with each other: only one IF or SWITCH
//   body runs per launch, and WHILE iterations are ordered one after the
//   other. No race between branches is invented.
// - A conditional node whose add call was not seen (a cloned graph, a child
//   graph node's copy, a graph made before the callbacks were on) has no
//   readable bodies: it stays an `other` node and the instantiation is listed
//   as unmodelled, like every node kind the model cannot read.
#include <algorithm>
#include <string>

#include "inject/model/cuda_model.h"

namespace streamsan::injection {
namespace {

graph_node_kind node_kind_of(raw_node_kind k) {
  switch (k) {
    case raw_node_kind::kernel: return graph_node_kind::kernel;
    case raw_node_kind::memcpy: return graph_node_kind::memcpy;
    case raw_node_kind::memset: return graph_node_kind::memset;
    case raw_node_kind::host: return graph_node_kind::host_func;
    case raw_node_kind::empty: return graph_node_kind::empty;
    case raw_node_kind::event_record: return graph_node_kind::event_record;
    case raw_node_kind::event_wait: return graph_node_kind::event_wait;
    case raw_node_kind::mem_alloc: return graph_node_kind::mem_alloc;
    case raw_node_kind::mem_free: return graph_node_kind::mem_free;
    case raw_node_kind::conditional:
    case raw_node_kind::other: return graph_node_kind::other;
  }
  return graph_node_kind::other;
}

// Conditionals nest (a body may hold a conditional); deeper ones are listed.
constexpr int max_conditional_depth = 16;

raw_graph_node join_node() {
  raw_graph_node n;
  n.kind = raw_node_kind::empty;
  return n;
}

// Note [Conditional nodes]: node `at` of `g` becomes the entry of `bodies`,
// run one after the other, and its dependents depend on their exit.
void splice_conditional(raw_graph& g, std::uint32_t at, const std::vector<raw_graph>& bodies) {
  g.nodes[at].kind = raw_node_kind::empty;
  std::vector<std::size_t> leaving;
  for (std::size_t e = 0; e < g.edges.size(); ++e) {
    if (g.edges[e].first == at) leaving.push_back(e);
  }
  std::uint32_t join = at;
  for (const raw_graph& body : bodies) {
    const auto base = static_cast<std::uint32_t>(g.nodes.size());
    g.nodes.insert(g.nodes.end(), body.nodes.begin(), body.nodes.end());
    for (const auto& [from, to] : body.edges) g.edges.emplace_back(base + from, base + to);
    const auto next = static_cast<std::uint32_t>(g.nodes.size());
    g.nodes.push_back(join_node());
    if (body.nodes.empty()) g.edges.emplace_back(join, next);
    for (std::uint32_t k = base; k < next; ++k) {
      g.edges.emplace_back(join, k);
      g.edges.emplace_back(k, next);
    }
    join = next;
  }
  for (const std::size_t e : leaving) g.edges[e].first = join;
}

void mark_unreadable(raw_graph_node& n, std::string_view why) {
  n.kind = raw_node_kind::other;
  n.what = "conditional node (";
  n.what += why;
  n.what += ')';
}

}  // namespace

std::string unreadable(std::string_view api, const std::string& why) {
  std::string text(api);
  text += " (graph not readable";
  if (!why.empty()) {
    text += ": ";
    text += why;
  }
  text += ')';
  return text;
}

namespace {

// The unmodelled call of an edit to an exec whose graph the model does not
// hold: one seen instantiated had a graph that was not readable.
template <class Exec>
std::string exec_unknown(std::string_view api, const Exec* e) {
  const bool seen = e != nullptr && !e->destroyed;
  return std::string(api) + (seen ? " (graph not readable)" : " (graph instantiated unseen)");
}

}  // namespace

std::optional<raw_graph> cuda_model::read_graph(std::uintptr_t graph) {
  auto g = driver_.describe_graph(graph);
  if (!g) return g;
  for (int depth = 0; depth < max_conditional_depth; ++depth) {
    // This round's conditional nodes and their bodies, as the add calls
    // said (under the lock); the bodies are read without it.
    std::vector<std::pair<std::uint32_t, std::vector<std::uintptr_t>>> found;
    {
      std::lock_guard lock(mutex_);
      for (std::uint32_t i = 0; i < g->nodes.size(); ++i) {
        raw_graph_node& n = g->nodes[i];
        if (n.kind != raw_node_kind::conditional) continue;
        const std::uintptr_t owner = n.owner != 0 ? n.owner : graph;
        const auto it = conditionals_.find(n.handle);
        if (n.handle == 0 || it == conditionals_.end() || it->second.graph != owner) {
          mark_unreadable(n, "its add call was not seen");
        } else {
          found.emplace_back(i, it->second.bodies);
        }
      }
    }
    if (found.empty()) return g;
    for (const auto& [at, body_graphs] : found) {
      std::vector<raw_graph> bodies;
      for (const std::uintptr_t b : body_graphs) {
        auto body = driver_.describe_graph(b);
        if (!body) break;
        for (raw_graph_node& n : body->nodes) {
          if (n.owner == 0) n.owner = b;
        }
        bodies.push_back(std::move(*body));
      }
      if (bodies.size() != body_graphs.size()) {
        mark_unreadable(g->nodes[at], "a body is not readable");
        continue;
      }
      splice_conditional(*g, at, bodies);
    }
  }
  for (raw_graph_node& n : g->nodes) {
    if (n.kind == raw_node_kind::conditional) mark_unreadable(n, "nested too deep");
  }
  return g;
}

void cuda_model::conditional_node_added(const call_site& at, std::uintptr_t node,
                                        std::uintptr_t graph, conditional_kind kind,
                                        std::span<const std::uintptr_t> bodies) {
  graph_node_added(at, node, graph);
  if (node == 0) return;
  std::lock_guard lock(mutex_);
  conditionals_[node] = conditional_site{graph, kind, {bodies.begin(), bodies.end()}};
}

void cuda_model::describe_node_locked(model_lock& lock, const raw_graph_node& n,
                                      string_id host_name, graph_node& out,
                                      std::vector<access>& accesses,
                                      std::vector<pointer_word>* words) {
  out.kind = node_kind_of(n.kind);
  accesses.clear();
  if (words != nullptr) words->clear();
  switch (n.kind) {
    case raw_node_kind::kernel: {
      // Used before anything else lets go of the lock.
      kernel_info uncached;
      const auto& info = kernel_info_for(lock, n.kernel, uncached);
      out.name = info.name;
      infer_accesses(info.plans, n.args, allocations_, accesses, &info.learned);
      if (words != nullptr) *words = pointer_words(info.plans, n.args, allocations_);
      break;
    }
    case raw_node_kind::memcpy: {
      memory_kind kind;
      const byte_range d = resolve_range(lock, n.dst, kind);
      const byte_range s = resolve_range(lock, n.src, kind);
      if (!is_none(s.alloc)) add_access(accesses, access{s, access_mode::read});
      if (!is_none(d.alloc)) add_access(accesses, access{d, access_mode::write});
      out.name = rec_.intern("memcpy");
      break;
    }
    case raw_node_kind::memset: {
      memory_kind kind;
      const byte_range d = resolve_range(lock, n.dst, kind);
      if (!is_none(d.alloc)) accesses.push_back(access{d, access_mode::write});
      out.name = rec_.intern("memset");
      break;
    }
    case raw_node_kind::host:
      out.name = host_name;
      break;
    // Note [Graph allocations]: the allocation is bound by the caller.
    case raw_node_kind::mem_alloc:
      out.name = rec_.intern("graph allocation");
      break;
    case raw_node_kind::mem_free:
      out.name = rec_.intern("graph free");
      break;
    case raw_node_kind::empty:
    case raw_node_kind::event_record:
    case raw_node_kind::event_wait:
      break;
    case raw_node_kind::conditional:  // read_graph splices or marks them all
    case raw_node_kind::other:
      out.name = rec_.intern(n.what);
      break;
  }
  // Note [Graphs name segments, not blocks] (cuda_model_blocks.cpp)
  accesses_to_segments_locked(accesses);
}

std::vector<string_id> cuda_model::host_names_of(const raw_graph& g) {
  std::vector<string_id> names(g.nodes.size());
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].kind != raw_node_kind::host) continue;
    names[i] = rec_.intern(driver_.function_name(g.nodes[i].host_fn));
  }
  return names;
}

cuda_model::exec_graph cuda_model::describe_exec_locked(model_lock& lock, const call_site& at,
                                                        const raw_graph& described,
                                                        std::uintptr_t graph,
                                                        std::span<const string_id> host_names) {
  exec_graph out;
  out.nodes.resize(described.nodes.size());
  for (std::size_t i = 0; i < described.nodes.size(); ++i) {
    const raw_graph_node& n = described.nodes[i];
    exec_node& node = out.nodes[i];
    node.handle = n.handle;
    node.event = n.event;
    node.kernel = n.kind == raw_node_kind::kernel ? n.kernel : 0;
    describe_node_locked(lock, n, host_names[i], node.node, node.accesses, &node.words);
    // The node kinds the model cannot read are listed, never dropped silently.
    if (node.node.kind == graph_node_kind::other) {
      emit(at, unmodelled_call{rec_.intern("cudaGraphInstantiate (" + n.what + ")")});
    }
    // Looked up after describe_node_locked, which may let go of the lock.
    const std::uintptr_t owner = n.owner != 0 ? n.owner : graph;
    if (const auto site = node_sites_.find(n.handle);
        n.handle != 0 && site != node_sites_.end() && site->second.graph == owner) {
      node.node.stack = site->second.stack;
    }
  }
  out.edges.reserve(described.edges.size());
  for (const auto& [from, to] : described.edges) out.edges.push_back(graph_edge{from, to});
  return out;
}

void cuda_model::emit_exec_locked(const call_site& at, graph_id id, exec_graph& g) {
  std::vector<graph_node> nodes;
  nodes.reserve(g.nodes.size());
  g.event_nodes.clear();
  for (const exec_node& n : g.nodes) {
    if (n.enabled && n.event != 0) {
      g.event_nodes.push_back(static_cast<std::uint32_t>(nodes.size()));
    }
    graph_node out = n.node;
    // Note [Earlier measurements of graph nodes]
    out.accesses = n.enabled ? logged_accesses_locked(n) : std::span<const access>{};
    nodes.push_back(out);
  }
  emit(at, graph_instantiate{id, nodes, g.edges});
}

cuda_model::exec_node* cuda_model::find_exec_node_locked(const call_site& at, std::uintptr_t exec,
                                                         std::uintptr_t node,
                                                         std::string_view api, graph_id& id) {
  const auto* e = graph_execs_.find(exec);
  const auto g = e != nullptr && !e->destroyed ? exec_graphs_.find(raw(e->id)) : exec_graphs_.end();
  if (g == exec_graphs_.end()) {
    emit(at, unmodelled_call{rec_.intern(exec_unknown(api, e))});
    return nullptr;
  }
  for (exec_node& n : g->second.nodes) {
    if (node != 0 && (n.handle == node || n.updated == node)) {
      id = e->id;
      return &n;
    }
  }
  emit(at, unmodelled_call{rec_.intern(std::string(api) + " (node not in the instantiated graph)")});
  return nullptr;
}

void cuda_model::graph_exec_updated(const call_site& at, std::uintptr_t exec, std::uintptr_t graph,
                                    std::string_view api) {
  const auto described = read_graph(graph);
  if (!described) {
    unmodelled(at, unreadable(api, driver_.graph_read_failure()));
    return;
  }
  const auto host_names = host_names_of(*described);
  model_lock lock(mutex_);
  exec_graph fresh = describe_exec_locked(lock, at, *described, graph, host_names);
  const auto* e = graph_execs_.find(exec);
  const auto it = e != nullptr && !e->destroyed ? exec_graphs_.find(raw(e->id)) : exec_graphs_.end();
  if (it == exec_graphs_.end()) {
    emit(at, unmodelled_call{rec_.intern(exec_unknown(api, e))});
    return;
  }
  exec_graph& old = it->second;
  for (std::size_t i = 0; i < fresh.nodes.size(); ++i) {
    exec_node& n = fresh.nodes[i];
    n.updated = n.handle;
    if (old.nodes.size() == fresh.nodes.size()) {
      n.handle = old.nodes[i].handle;
      n.enabled = old.nodes[i].enabled;
      // Note [Graph allocations]: an update keeps the exec's memory nodes.
      if (n.node.kind == old.nodes[i].node.kind) n.node.memory = old.nodes[i].node.memory;
    }
  }
  old = std::move(fresh);
  emit_exec_locked(at, e->id, old);
}

void cuda_model::graph_exec_node_set(const call_site& at, std::uintptr_t exec, std::uintptr_t node,
                                     const raw_graph_node& params, std::string_view api) {
  // Asked before the lock, like every driver answer.
  const string_id host_name = params.kind == raw_node_kind::host
                                  ? rec_.intern(driver_.function_name(params.host_fn))
                                  : string_id{};
  const stack_id stack = at.frames.empty() ? stack_id{} : rec_.intern_stack(at.frames);
  model_lock lock(mutex_);
  graph_node described;
  std::vector<access> accesses;
  std::vector<pointer_word> words;
  describe_node_locked(lock, params, host_name, described, accesses, &words);
  graph_id id{};
  exec_node* n = find_exec_node_locked(at, exec, node, api, id);
  if (n == nullptr) return;
  described.stack = is_none(stack) ? n->node.stack : stack;
  n->node = described;
  n->accesses = std::move(accesses);
  n->words = std::move(words);
  n->earlier.clear();  // Note [Earlier measurements of graph nodes]
  n->earlier_starts.clear();
  n->event = params.event;
  n->kernel = params.kind == raw_node_kind::kernel ? params.kernel : 0;
  emit_exec_locked(at, id, exec_graphs_.at(raw(id)));
}

void cuda_model::emit_event_nodes_locked(const call_site& at, graph_id id, stream_id stream,
                                         graph_node_kind kind) {
  const auto g = exec_graphs_.find(raw(id));
  if (g == exec_graphs_.end()) return;
  for (const std::uint32_t i : g->second.event_nodes) {
    const exec_node& n = g->second.nodes[i];
    if (n.node.kind != kind) continue;
    const event_id event = resolve_event_locked(at, n.event);
    if (kind == graph_node_kind::event_wait) {
      emit(at, event_wait{event, stream});
    } else {
      emit(at, event_record{event, stream});
    }
  }
}

namespace {

// Note [Child graph edits]: `fresh` may replace the nodes after `entry`.
template <class Exec>
bool child_range_matches(const Exec& g, std::size_t entry, const Exec& fresh) {
  const std::size_t first = entry + 1;
  const std::size_t exit = first + fresh.nodes.size();
  if (g.nodes[entry].node.kind != graph_node_kind::empty || exit >= g.nodes.size()) return false;
  if (g.nodes[exit].node.kind != graph_node_kind::empty || g.nodes[exit].handle != 0) return false;
  for (std::size_t i = 0; i < fresh.nodes.size(); ++i) {
    if (g.nodes[first + i].node.kind != fresh.nodes[i].node.kind) return false;
  }
  return true;
}

}  // namespace

void cuda_model::graph_exec_child_set(const call_site& at, std::uintptr_t exec,
                                      std::uintptr_t node, std::uintptr_t child,
                                      std::string_view api) {
  const auto described = read_graph(child);
  if (!described) {
    unmodelled(at, unreadable(api, driver_.graph_read_failure()));
    return;
  }
  const auto host_names = host_names_of(*described);
  model_lock lock(mutex_);
  exec_graph fresh = describe_exec_locked(lock, at, *described, child, host_names);
  graph_id id{};
  exec_node* entry = find_exec_node_locked(at, exec, node, api, id);
  if (entry == nullptr) return;
  exec_graph& g = exec_graphs_.at(raw(id));
  const auto at_entry = static_cast<std::size_t>(entry - g.nodes.data());
  if (!child_range_matches(g, at_entry, fresh)) {
    emit(at, unmodelled_call{rec_.intern(std::string(api) +
                                         " (child graph unlike the instantiated one)")});
    return;
  }
  for (std::size_t i = 0; i < fresh.nodes.size(); ++i) {
    exec_node& old = g.nodes[at_entry + 1 + i];
    exec_node& n = fresh.nodes[i];
    n.updated = n.handle;
    n.handle = old.handle;
    n.enabled = old.enabled;
    old = std::move(n);
  }
  emit_exec_locked(at, id, g);
}

void cuda_model::graph_exec_node_enabled(const call_site& at, std::uintptr_t exec,
                                         std::uintptr_t node, bool enabled,
                                         std::string_view api) {
  model_lock lock(mutex_);
  graph_id id{};
  exec_node* n = find_exec_node_locked(at, exec, node, api, id);
  if (n == nullptr || n->enabled == enabled) return;
  n->enabled = enabled;
  emit_exec_locked(at, id, exec_graphs_.at(raw(id)));
}

}  // namespace streamsan::injection
