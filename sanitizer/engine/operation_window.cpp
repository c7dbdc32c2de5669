#include "sanitizer/engine/operation_window.h"

#include <algorithm>
#include <unordered_map>

namespace streamsan {

operation_window::operation_window(std::uint32_t capacity, std::uint32_t ops_per_timeline)
    : ops_per_timeline_(std::max<std::uint32_t>(ops_per_timeline, 2)),
      ops_(std::max<std::uint32_t>(capacity, 2)),
      edges_(2 * ops_.size()) {}

operation_window::lane_state& operation_window::lane(context_slot slot) {
  if (slot >= lanes_.size()) lanes_.resize(slot + 1);
  return lanes_[slot];
}

std::uint64_t operation_window::add(context_slot lane_slot, const timeline_op& op) {
  const std::uint64_t id = next_id_++;
  ops_[(id - 1) % ops_.size()] = entry{id, lane_slot, op};
  lane(lane_slot).last = id;
  return id;
}

void operation_window::hand_over_lane(context_slot from, context_slot to) {
  const std::uint64_t last = last_in(from);
  forget_lane(from);
  lane_state& target = lane(to);
  target.last = std::max(target.last, last);
}

void operation_window::edge(std::uint64_t from, std::uint64_t to, timeline_edge_kind kind) {
  if (from == 0 || to == 0 || from == to) return;
  edges_[edges_added_++ % edges_.size()] = stored_edge{from, to, kind};
}

void operation_window::join(context_slot from_lane, std::uint64_t to, timeline_edge_kind kind) {
  const std::uint64_t from = last_in(from_lane);
  const entry* target = find(to);
  if (from == 0 || target == nullptr || target->lane == from_lane) return;
  auto& joined = lane(target->lane).joined;
  const auto it = std::find_if(joined.begin(), joined.end(),
                               [&](const auto& j) { return j.first == from_lane; });
  if (it != joined.end()) {
    if (it->second >= from) return;
    it->second = from;
  } else {
    joined.emplace_back(from_lane, from);
  }
  edge(from, to, kind);
}

const operation_window::entry* operation_window::find(std::uint64_t id) const noexcept {
  if (id == 0 || id >= next_id_ || next_id_ - id > ops_.size()) return nullptr;
  return &ops_[(id - 1) % ops_.size()];
}

std::shared_ptr<race_timeline> operation_window::cut(std::uint64_t current,
                                                     std::uint64_t previous_seq,
                                                     context_slot previous_lane,
                                                     const timeline_op& previous_fallback) const {
  if (find(current) == nullptr) return nullptr;
  const std::uint64_t oldest = next_id_ > ops_.size() ? next_id_ - ops_.size() : 1;
  const std::uint64_t first =
      std::max(oldest, current >= ops_per_timeline_ ? current - ops_per_timeline_ + 1 : 1);

  std::uint64_t previous = 0;
  for (std::uint64_t id = current; id-- > oldest;) {
    const entry& e = *find(id);
    if (e.lane == previous_lane && e.op.seq == previous_seq) {
      previous = id;
      break;
    }
  }

  auto timeline = std::make_shared<race_timeline>();
  std::unordered_map<std::uint64_t, std::uint32_t> index;  // op id -> position
  const auto keep = [&](std::uint64_t id) {
    index.emplace(id, static_cast<std::uint32_t>(timeline->ops.size()));
    timeline->ops.push_back(find(id)->op);
  };
  if (previous == 0) {
    timeline->ops.push_back(previous_fallback);
    timeline->previous_outside_window = true;
  } else if (previous < first) {
    keep(previous);
    timeline->omitted = first - previous - 1;
  }
  for (std::uint64_t id = first; id <= current; ++id) keep(id);
  timeline->previous = previous != 0 ? index.at(previous) : 0;
  timeline->current = index.at(current);

  const std::uint64_t stored = std::min<std::uint64_t>(edges_added_, edges_.size());
  for (std::uint64_t i = edges_added_ - stored; i < edges_added_; ++i) {
    const stored_edge& e = edges_[i % edges_.size()];
    const auto from = index.find(e.from);
    const auto to = index.find(e.to);
    if (from == index.end() || to == index.end()) continue;
    timeline->edges.push_back(timeline_edge{from->second, to->second, e.kind});
  }
  return timeline;
}

std::size_t operation_window::bytes_held() const noexcept {
  std::size_t bytes = ops_.capacity() * sizeof(entry) + edges_.capacity() * sizeof(stored_edge) +
                      lanes_.capacity() * sizeof(lane_state);
  for (const auto& l : lanes_) bytes += l.joined.capacity() * sizeof(l.joined[0]);
  return bytes;
}

}  // namespace streamsan
