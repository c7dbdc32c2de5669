// The model's side of exact footprints: which launch records wait for a
// measurement, and what a measurement becomes (Note [Measured footprints
// arrive late], Note [Learned access modes], Note [Looking up the past]).
#include <algorithm>
#include <utility>

#include "inject/model/cuda_model.h"
#include "sanitizer/log/threads_with_state.h"

namespace streamsan::injection {
namespace {

// The measured launch the calling thread's next kernel_launched() is.
thread_local std::uint64_t expected_measurement = 0;
// Note [A thread-local looked at only when it can hold something]
// (sanitizer/log/threads_with_state.h): the threads whose expected_measurement is set.
threads_with_state threads_expecting;

void set_expected_launch(std::uint64_t id) noexcept {
  std::uint64_t& expected = expected_measurement;
  threads_expecting.changed(expected != 0, id != 0);
  expected = id;
}
// The measured nodes of the calling thread's next graph_launched() (Note
// [Thread state without a TLS wrapper]: trivially constructed).
struct expected_graph_nodes {
  const cuda_model::measured_graph_node* data = nullptr;
  std::size_t size = 0;
};
constinit thread_local expected_graph_nodes expected_graph{};

access_mode mode_of(precise::footprint_kind k) {
  switch (k) {
    case precise::footprint_kind::read: return access_mode::read;
    case precise::footprint_kind::write: return access_mode::write;
    case precise::footprint_kind::atomic: return access_mode::atomic;
  }
  return access_mode::read_write;
}

}  // namespace

void cuda_model::set_footprint_resolver(precise::footprint_resolver* resolver) noexcept {
  model_lock lock(mutex_);
  resolver_ = resolver;
}

void cuda_model::expect_measured_launch(std::uint64_t id) noexcept { set_expected_launch(id); }

void cuda_model::clear_expected_measured_launch() noexcept {
  if (threads_expecting.none()) return;
  set_expected_launch(0);
}

std::uint64_t cuda_model::take_expected_measured_launch() noexcept {
  if (threads_expecting.none()) return 0;
  const std::uint64_t taken = expected_measurement;
  set_expected_launch(0);
  return taken;
}

void cuda_model::expect_measured_graph_launch(
    std::span<const measured_graph_node> nodes) noexcept {
  expected_graph = {nodes.data(), nodes.size()};
}

void cuda_model::clear_expected_measured_graph_launch() noexcept { expected_graph = {}; }

std::span<const cuda_model::measured_graph_node>
cuda_model::take_expected_measured_graph_launch() noexcept {
  const auto taken = std::exchange(expected_graph, {});
  return {taken.data, taken.size};
}

// Note [Measuring graph kernel nodes]
// A graph kernel node runs inside a graph launch and no launch record of
// its own carries its accesses: the engine applies, at each graph_launch,
// the nodes' accesses of the graph's last graph_instantiate (Note [A graph
// launch is one operation]). So a graph launch whose kernel nodes the
// source measured (inject/sanitizer_api, Note [Which graph nodes are
// measured]) logs the exec's graph again, under the same id, right before
// its graph_launch, as an edit does (Note [Editing an instantiated graph]),
// and that graph_instantiate waits in the footprint resolver (Note
// [Measured footprints arrive late]) until every measured node's footprint
// is back: measured nodes take their measured accesses, the others (and a
// node whose table overflowed) keep their inferred ones. The engine checks
// the node pairs of that graph again (Note [Graph candidates wait for a
// launch]), so a race between two measured nodes is confirmed and a pair
// that does not overlap is no candidate, and the launch applies the
// measured accesses against the work of the streams. A measurement holds
// for the launch that was measured only (a kernel's footprint may depend on
// data): the next launch that measures nothing logs the graph again with
// its inferred accesses. Nodes are found by the handle the node callback
// gives, the node of the graph that was instantiated (or of the last
// update). A measured node teaches its kernel what its pointer words do
// (Note [Learned access modes]) through the words described at
// instantiation (or at the node's last exec edit), unless one of them no
// longer points into the allocation it did then: a word whose buffer was
// freed and handed out again would be learned as unused.
bool cuda_model::await_graph_measurement_locked(const call_site& at, graph_id id, exec_graph& g,
                                                std::span<const measured_graph_node> nodes) {
  if (nodes.empty() || resolver_ == nullptr) return false;
  const std::uint64_t key = ++last_graph_launch_;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> found;  // tracker id, node index
  for (const measured_graph_node& m : nodes) {
    for (std::uint32_t i = 0; i < g.nodes.size(); ++i) {
      const exec_node& n = g.nodes[i];
      if (m.node == 0 || (n.handle != m.node && n.updated != m.node)) continue;
      if (n.enabled && n.kernel != 0) found.emplace_back(m.id, i);
      break;
    }
  }
  if (found.empty()) return false;
  pending_graph& pg = pending_graphs_[key];
  pg.exec = id;
  pg.remaining = found.size();
  for (const auto& [tracker_id, index] : found) {
    pending_measurement p;
    p.kernel = g.nodes[index].kernel;
    p.words = words_still_valid_locked(g.nodes[index].words);
    p.epoch = allocations_.epoch();
    p.graph_launch = key;
    p.node = index;
    pending_measurements_[tracker_id] = std::move(p);
  }
  pg.token = resolver_->await_next_graph();
  g.measured_logged = true;
  any_graph_measured_logged_ = true;
  emit_exec_locked(at, id, g);
  return true;
}

// Note [Earlier measurements of graph nodes]
// A graph node is not measured at every launch: the default mode measures
// it only at a launch a candidate asked for, and of the nodes of one kernel
// in an exec only one can ever be measured (Note [A graph node keeps its
// per-launch data] in inject/sanitizer_api/launch_tracker.cpp). Logged
// with its inferred footprint, from each pointer to the end of its
// allocation, at every launch that does not measure it, a node beside other
// work would leave a candidate at every launch. So a node keeps its last
// measured accesses, and a launch that does not measure it logs it with
// them, as inferred ones: a conflict through them is a candidate, never a
// confirmed race (a measurement holds for its launch: a footprint may
// depend on data), but where they do not overlap, nothing is listed. They
// stand only while every allocation they name is still the one measured
// (none freed and handed out again), and a node edit forgets them.
void cuda_model::remember_measured_node_locked(graph_id exec, std::uint32_t node,
                                               std::span<const access> accesses,
                                               std::span<const std::uint64_t> starts) {
  const auto g = exec_graphs_.find(raw(exec));
  if (g == exec_graphs_.end() || node >= g->second.nodes.size()) return;
  exec_node& n = g->second.nodes[node];
  n.earlier.assign(accesses.begin(), accesses.end());
  for (access& a : n.earlier) a.origin = access_origin::inferred;
  n.earlier_starts.assign(starts.begin(), starts.end());
}

std::span<const access> cuda_model::logged_accesses_locked(const exec_node& n) const {
  if (n.earlier.empty() || n.earlier.size() != n.earlier_starts.size()) return n.accesses;
  for (std::size_t i = 0; i < n.earlier.size(); ++i) {
    if (!still_allocated_locked(n.earlier_starts[i], n.earlier[i].range.alloc)) return n.accesses;
  }
  return n.earlier;
}

bool cuda_model::still_allocated_locked(std::uint64_t address, alloc_id id) const {
  const allocation* a = allocations_.find_live(address);
  return a != nullptr && a->id == id;
}

std::vector<pointer_word> cuda_model::words_still_valid_locked(
    std::span<const pointer_word> words) const {
  for (const pointer_word& w : words) {
    if (!still_allocated_locked(w.address, w.alloc)) return {};
  }
  return {words.begin(), words.end()};
}

void cuda_model::await_measurement_locked(std::uint64_t id, std::uintptr_t kernel,
                                          const kernel_info* info, const kernel_arguments& args,
                                          std::span<const access> unmeasurable) {
  if (id == 0 || resolver_ == nullptr) return;
  pending_measurement p;
  p.token = resolver_->await_next_launch();
  p.kernel = kernel;
  p.epoch = allocations_.epoch();
  if (info != nullptr) p.words = pointer_words(info->plans, args, allocations_);
  p.unmeasurable.assign(unmeasurable.begin(), unmeasurable.end());
  pending_measurements_[id] = std::move(p);
}

std::vector<access> cuda_model::measured_accesses(const precise::decoded_footprint& decoded,
                                                  const allocation_map& allocations,
                                                  std::uint64_t epoch,
                                                  std::vector<std::uint64_t>* starts) {
  std::vector<access> out;
  for (const auto& interval : decoded.intervals) {
    const access_mode mode = mode_of(interval.kind);
    std::uint64_t pos = interval.begin;
    while (pos < interval.end) {
      if (const auto* a = allocations.find_at(pos, epoch)) {
        const std::uint64_t end = std::min(interval.end, a->base + std::max<std::uint64_t>(a->size, 1));
        out.push_back(access{byte_range{a->id, pos - a->base, end - pos}, mode,
                             access_origin::measured});
        if (starts != nullptr) starts->push_back(pos);
        pos = end;
        continue;
      }
      // Untracked bytes: skip to the next allocation that was live then.
      std::uint64_t next = interval.end;
      allocations.for_each_live_overlapping(pos, interval.end, [&](const allocation& a) {
        if (a.born <= epoch && a.base > pos) next = std::min(next, a.base);
      });
      pos = next;
    }
  }
  return out;
}

void cuda_model::measured_launch_done(std::uint64_t id, const precise::decoded_footprint& decoded) {
  precise::footprint_resolver* resolver = nullptr;
  precise::footprint_resolver::token token = 0;
  std::optional<std::vector<access>> measured;
  {
    model_lock lock(mutex_);
    const auto it = pending_measurements_.find(id);
    if (it == pending_measurements_.end()) return;
    // Note [A decoding job that throws] (launch_tracker.cpp): the accesses,
    // the allocation most likely to fail here, are made while the launch
    // is still pending, so that if they throw, the tracker's second
    // hand-over, unmeasured, finds it and lets the log behind it go on.
    std::vector<std::uint64_t> starts;
    if (decoded.complete) {
      measured = measured_accesses(decoded, allocations_, it->second.epoch,
                                   it->second.graph_launch != 0 ? &starts : nullptr);
    }
    pending_measurement p = std::move(it->second);
    pending_measurements_.erase(it);
    resolver = resolver_;
    if (p.graph_launch != 0) [[unlikely]] {
      // Note [Measuring graph kernel nodes]: delivered with the last node.
      const auto g = pending_graphs_.find(p.graph_launch);
      if (g == pending_graphs_.end()) return;
      if (measured) {
        if (const auto k = kernels_.find(p.kernel); k != kernels_.end() && !p.words.empty()) {
          learn_from_measurement(p.words, *measured, k->second.learned);
        }
        remember_measured_node_locked(g->second.exec, p.node, *measured, starts);
        g->second.measured.emplace_back(p.node, std::move(*measured));
      }
      if (--g->second.remaining > 0) return;
      const pending_graph done = std::move(g->second);
      pending_graphs_.erase(g);
      lock.unlock();
      if (resolver != nullptr) resolver->resolve_nodes(done.token, done.measured);
      return;
    }
    token = p.token;
    if (measured) {
      if (const auto k = kernels_.find(p.kernel); k != kernels_.end()) {
        learn_from_measurement(p.words, *measured, k->second.learned);
      }
      // Note [Texture and surface objects]: fetches no measurement sees.
      measured->insert(measured->end(), p.unmeasurable.begin(), p.unmeasurable.end());
    }
    if (p.in_operator) {
      // Note [Measured footprints of an operator's launches]
      if (p.token == 0) return;  // resolved when its operator ended
      if (!p.op_accesses) {      // the operator has not ended: it resolves the launch
        p.measured = std::move(measured);
        pending_measurements_.emplace(id, std::move(p));
        return;
      }
      if (measured) narrow_to_measured(*p.op_accesses, *measured);
      measured = std::move(p.op_accesses);
    }
  }
  // Outside the model's lock: the resolver delivers to the engine.
  if (resolver != nullptr) resolver->resolve(token, measured);
}

std::uint32_t cuda_model::estimate_footprint_slots(std::uintptr_t kernel,
                                                   const kernel_arguments& args) {
  model_lock lock(mutex_);
  kernel_info uncached;
  const kernel_info& info = kernel_info_for(lock, kernel, uncached);
  std::vector<access> inferred;
  infer_accesses(info.plans, args, allocations_, inferred);
  std::uint64_t slots = 0;
  for (const auto& a : inferred) {
    const std::uint64_t pages = a.range.size / precise::page_bytes + 2;
    const unsigned kinds = (reads(a.mode) ? 1 : 0) + (writes(a.mode) ? 1 : 0) + 1;  // + atomic
    slots += pages * kinds;
  }
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(slots, 1u << 24));
}

// Note [No host memory, no host race]
// Until work can overlap, every launch asks whether one of its pointer
// words points into memory the host can access (Note [First launches are
// measured once work can overlap]): a walk of all its argument words, which
// for PyTorch's by-value structs is hundreds of lookups, on every launch of
// a single-stream training loop (78,782 launches in 3,000 steps of the MLP
// benchmark; on the H200 the walk held 53 of the 236 main-thread samples in
// our library, about 2% of the thread: docs/injection.md). Most such programs hold no pinned, pageable or managed allocation
// at all, and then no word can point into one: the allocation map counts
// its live ones, and with none the answer is no without the walk.
bool cuda_model::launch_may_race(stream_arg s, std::uintptr_t kernel,
                                 const kernel_arguments& args) {
  const stream_ref on = prepare(s);
  model_lock lock(mutex_);
  resolve_stream(lock, call_site{}, on);  // first: it may let go of the lock
  if (work_may_overlap()) return true;
  // Note [No host memory, no host race]
  if (allocations_.live_host_accessible_count() == 0) return false;
  kernel_info uncached;
  const kernel_info& info = kernel_info_for(lock, kernel, uncached);
  return any_word_into(info.plans, args, allocations_,
                       [](const allocation& a) { return host_accessible(a.kind); });
}

}  // namespace streamsan::injection
