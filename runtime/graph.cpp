#include "runtime/graph.h"

#include <iostream>
#include <utility>
#include <vector>

#include "runtime/device.h"
#include "runtime/session/session.h"

namespace streamsan::rt {
namespace {

graph_state& lookup(session& s, graph_id id, const describe& what) {
  const auto it = s.graphs.find(id);
  if (it == s.graphs.end()) throw usage_error(what() + ": the graph was destroyed");
  return it->second;
}

// Ends the capture in the registries: streams and events leave it.
void leave_capture(session& s, graph_state& g, const runtime_capture& capture) {
  for (const auto id : capture.streams()) {
    if (const auto it = s.streams.find(id); it != s.streams.end()) it->second.capture = graph_id{};
  }
  for (auto& [id, e] : s.events) {
    if (e.capture == g.id) e.capture = graph_id{};
  }
  --s.active_captures;
}

}  // namespace

graph::graph() {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  id_ = s.log.new_graph_id();
  session_ = s.number;
  s.graphs[id_].id = id_;
}

graph::graph(graph&& other) noexcept
    : id_(std::exchange(other.id_, graph_id{})), session_(std::exchange(other.session_, 0)) {}

graph& graph::operator=(graph&& other) noexcept {
  if (this != &other) {
    reset();
    if (auto* s = session_if(session_)) {
      std::lock_guard lock(s->mutex);
      s->graphs.erase(id_);
    }
    id_ = std::exchange(other.id_, graph_id{});
    session_ = std::exchange(other.session_, 0);
  }
  return *this;
}

graph::~graph() noexcept {
  reset();
  if (auto* s = session_if(session_)) {
    std::lock_guard lock(s->mutex);
    s->graphs.erase(id_);
  }
}

void graph::capture_begin(stream_ref on, capture_mode mode) {
  auto& s = enter();
  const auto what = [&] { return "capturing " + to_string(id_) + " on " + on.name(); };
  if (session_ != s.number) throw usage_error(what() + ": the graph belongs to an ended session");
  std::lock_guard lock(s.mutex);
  auto& g = lookup(s, id_, what);
  auto& st = s.stream(on, what);
  if (g.graph || g.capture) {
    throw usage_error(what() + ": the graph already holds a capture (reset() it first)");
  }
  if (st.flavor == stream_flavor::legacy_default) {
    throw usage_error(what() + ": the legacy default stream cannot capture");
  }
  if (!is_none(st.capture)) {
    throw usage_error(what() + ": " + on.name() + " is already capturing " + to_string(st.capture));
  }
  s.device->begin_capture(st.target(), mode);
  g.capture = std::make_unique<runtime_capture>(st.id);
  g.origin = st.id;
  g.device = st.device;
  g.mode = mode;
  g.invalidated = false;
  st.capture = id_;
  ++s.active_captures;
  if (s.logging()) s.emit(graph_capture_begin{st.id, id_});
}

void graph::capture_end() {
  auto& s = enter();
  const auto what = [&] { return "ending the capture of " + to_string(id_); };
  if (session_ != s.number) throw usage_error(what() + ": the graph belongs to an ended session");
  std::lock_guard lock(s.mutex);
  auto& g = lookup(s, id_, what);
  if (!g.capture) throw usage_error(what() + ": the graph is not capturing");
  const auto origin = s.streams.find(g.origin);
  if (origin == s.streams.end()) {
    leave_capture(s, g, *g.capture);
    g.capture.reset();
    throw usage_error(what() + ": " + to_string(g.origin) + " was destroyed during the capture");
  }
  const auto unjoined = g.capture->unjoined();
  // The backend's capture ends in every case; a graph it returns for a
  // failed capture is dropped.
  std::optional<graph_handle> handle;
  std::string backend_error;
  try {
    handle = s.device->end_capture(origin->second.target());
  } catch (const cuda_error& e) {
    backend_error = e.what();
  }
  const bool invalidated = g.invalidated;
  const auto capture = std::move(g.capture);
  leave_capture(s, g, *capture);
  // The stream stops capturing whether or not the capture produced a graph;
  // the engine must see that, or it would keep ignoring the stream's work.
  if (s.logging()) s.emit(graph_capture_end{g.origin, id_});
  const auto drop = [&] {
    if (handle) s.device->destroy_graph(*handle);
  };
  if (invalidated) {
    drop();
    throw cuda_error(error_code::capture_invalidated, what(),
                     "a forbidden call during the capture invalidated it");
  }
  if (unjoined) {
    drop();
    throw cuda_error(error_code::capture_unjoined, what(),
                     to_string(*unjoined) + " joined the capture but was not joined back into " +
                         to_string(g.origin));
  }
  if (!handle) throw runtime_error(what() + ": " + backend_error);
  g.graph = handle;
  g.exec = s.device->instantiate(*handle);
  g.nodes = capture->nodes().size();
  g.edges = capture->edges().size();
  if (s.logging()) {
    std::vector<graph_node> nodes;
    nodes.reserve(capture->nodes().size());
    for (const auto& n : capture->nodes()) {
      nodes.push_back(graph_node{n.kind, s.intern(n.name), n.accesses, n.stack});
    }
    std::vector<graph_edge> edges;
    edges.reserve(capture->edges().size());
    for (const auto& e : capture->edges()) edges.push_back(graph_edge{e.from, e.to});
    s.emit(graph_instantiate{id_, nodes, edges});
  }
}

bool graph::captured() const {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  if (session_ != s.number) return false;
  const auto it = s.graphs.find(id_);
  return it != s.graphs.end() && it->second.exec.has_value();
}

std::size_t graph::node_count() const {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  return session_ == s.number ? lookup(s, id_, [] { return std::string("node_count"); }).nodes : 0;
}

std::size_t graph::edge_count() const {
  auto& s = enter();
  std::lock_guard lock(s.mutex);
  return session_ == s.number ? lookup(s, id_, [] { return std::string("edge_count"); }).edges : 0;
}

void graph::launch(stream_ref on) const {
  auto& s = enter();
  const auto what = [&] { return "launching " + to_string(id_) + " on " + on.name(); };
  if (session_ != s.number) throw usage_error(what() + ": the graph belongs to an ended session");
  std::lock_guard lock(s.mutex);
  auto& g = lookup(s, id_, what);
  auto& st = s.stream(on, what);
  if (!g.exec) throw usage_error(what() + ": nothing was captured");
  if (!is_none(st.capture)) {
    throw usage_error(what() + ": launching a graph into a capture is not supported");
  }
  s.check_implicit_capture(st, what);
  s.device->launch_graph(*g.exec, st.target());
  if (s.logging()) s.emit(graph_launch{id_, st.id});
}

void graph::replay() const {
  int device = 0;
  {
    auto& s = enter();
    std::lock_guard lock(s.mutex);
    if (session_ != s.number) throw usage_error("replaying " + to_string(id_) + ": ended session");
    device = lookup(s, id_, [&] { return "replaying " + to_string(id_); }).device;
  }
  launch(current_stream(device));
}

void graph::reset() noexcept {
  auto* s = session_if(session_);
  if (s == nullptr) return;
  try {
    std::lock_guard lock(s->mutex);
    const auto it = s->graphs.find(id_);
    if (it == s->graphs.end()) return;
    auto& g = it->second;
    if (g.capture) {
      if (const auto origin = s->streams.find(g.origin); origin != s->streams.end()) {
        try {
          s->device->destroy_graph(s->device->end_capture(origin->second.target()));
        } catch (const cuda_error&) {
          // An abandoned capture: nothing to keep.
        }
        if (s->logging()) s->emit(graph_capture_end{g.origin, id_});
      }
      leave_capture(*s, g, *g.capture);
      g.capture.reset();
    }
    if (g.exec) s->device->destroy_graph_exec(*g.exec);
    if (g.graph) s->device->destroy_graph(*g.graph);
    g.exec.reset();
    g.graph.reset();
    g.nodes = g.edges = 0;
  } catch (const std::exception& e) {
    std::cerr << "streamsan: resetting " << to_string(id_) << ": " << e.what() << '\n';
  }
}

// ---- graph_capture ----

graph_capture::graph_capture(graph& g, stream_ref s, capture_mode mode) : graph_(&g) {
  previous_device_ = current_device();
  previous_stream_ = current_stream(s.device());
  set_stream(s);
  try {
    g.capture_begin(s, mode);
  } catch (...) {
    set_stream(previous_stream_);
    set_device(previous_device_);
    throw;
  }
}

graph_capture::~graph_capture() noexcept {
  if (ended_) return;
  try {
    end();
  } catch (const std::exception& e) {
    std::cerr << "streamsan: ending a graph capture: " << e.what() << '\n';
  }
}

void graph_capture::end() {
  if (ended_) return;
  ended_ = true;
  // Restore the current stream and device whatever capture_end says.
  struct restore {
    graph_capture& self;
    ~restore() {
      try {
        set_stream(self.previous_stream_);
        set_device(self.previous_device_);
      } catch (const std::exception&) {
        // The session ended or the stream died; nothing to restore to.
      }
    }
  } restore_on_exit{*this};
  graph_->capture_end();
}

bool is_current_stream_capturing() { return current_stream().is_capturing(); }

}  // namespace streamsan::rt
