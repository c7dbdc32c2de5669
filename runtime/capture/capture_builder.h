// The dependency structure of one stream capture (S-GRAPH-1, S-GRAPH-2),
// shared by the runtime (which logs graph_instantiate) and the sim backend
// (which replays the graph).
//
// Note [How a capture becomes a graph]
// CUDA builds the graph from the order of calls: each stream taking part in
// the capture has a frontier, the nodes its next operation depends on. An
// operation on a capturing stream becomes a node depending on the frontier,
// and becomes the frontier. Recording an event on a capturing stream
// remembers the frontier; a stream that waits on that event joins the
// capture (if it was not in it) and adds the remembered nodes to its
// frontier. That is how a capture forks to other streams and joins back.
// Ending the capture on the origin stream requires every other joined
// stream's frontier to be an ancestor of (or in) the origin's frontier:
// otherwise the capture is "unjoined" (cudaErrorStreamCaptureUnjoined).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace streamsan::rt {

struct capture_edge {
  std::uint32_t from = 0;
  std::uint32_t to = 0;
};

template <class StreamKey, class EventKey, class Payload>
class capture_builder {
 public:
  explicit capture_builder(StreamKey origin) : origin_(origin) { frontiers_[origin]; }

  StreamKey origin() const { return origin_; }
  bool has_stream(const StreamKey& s) const { return frontiers_.contains(s); }
  const std::vector<Payload>& nodes() const noexcept { return nodes_; }
  const std::vector<capture_edge>& edges() const noexcept { return edges_; }

  // An operation on capturing stream `s`; returns its node index.
  std::uint32_t add_node(const StreamKey& s, Payload payload) {
    const auto index = static_cast<std::uint32_t>(nodes_.size());
    nodes_.push_back(std::move(payload));
    auto& frontier = frontiers_[s];
    for (const auto from : frontier) edges_.push_back({from, index});
    frontier.assign(1, index);
    return index;
  }

  // cudaEventRecord(e, s) with `s` capturing.
  void record_event(const StreamKey& s, const EventKey& e) { events_[e] = frontiers_[s]; }

  // Whether `e` was last recorded into this capture (forget_event undoes).
  bool has_event(const EventKey& e) const { return events_.contains(e); }
  // `e` was recorded again outside this capture.
  void forget_event(const EventKey& e) { events_.erase(e); }

  // cudaStreamWaitEvent(s, e) with has_event(e): `s` joins the capture.
  void wait_event(const StreamKey& s, const EventKey& e) {
    const auto it = events_.find(e);
    if (it == events_.end()) return;
    join(s, it->second);
  }

  // `waiter` waits for everything `waited` captured so far (wait_stream).
  void wait_stream(const StreamKey& waiter, const StreamKey& waited) {
    const auto snapshot = frontiers_[waited];
    join(waiter, snapshot);
  }

  // A joined stream, other than the origin, whose work the origin does not
  // depend on; none when the capture can end.
  std::optional<StreamKey> unjoined() const {
    std::vector<bool> reaches(nodes_.size(), false);
    std::vector<std::uint32_t> work(frontiers_.at(origin_));
    for (const auto n : work) reaches[n] = true;
    while (!work.empty()) {
      const auto n = work.back();
      work.pop_back();
      for (const auto& e : edges_) {
        if (e.to == n && !reaches[e.from]) {
          reaches[e.from] = true;
          work.push_back(e.from);
        }
      }
    }
    for (const auto& [stream, frontier] : frontiers_) {
      if (stream == origin_) continue;
      for (const auto n : frontier) {
        if (!reaches[n]) return stream;
      }
    }
    return std::nullopt;
  }

  // The streams that took part (the origin included).
  std::vector<StreamKey> streams() const {
    std::vector<StreamKey> out;
    for (const auto& [stream, frontier] : frontiers_) out.push_back(stream);
    return out;
  }

 private:
  void join(const StreamKey& s, const std::vector<std::uint32_t>& nodes) {
    auto& frontier = frontiers_[s];
    for (const auto n : nodes) {
      if (std::find(frontier.begin(), frontier.end(), n) == frontier.end()) frontier.push_back(n);
    }
  }

  StreamKey origin_;
  std::vector<Payload> nodes_;
  std::vector<capture_edge> edges_;
  std::map<StreamKey, std::vector<std::uint32_t>> frontiers_;
  std::map<EventKey, std::vector<std::uint32_t>> events_;
};

}  // namespace streamsan::rt
