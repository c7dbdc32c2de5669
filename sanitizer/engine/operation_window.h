// The bounded window of recent operations and the happens-before edges the
// engine applied between them, from which a race's timeline is cut (Note
// [Race timelines] in diagnostic.h).
//
// Note [The window is bounded]
// Two rings of fixed capacity: operations (each in its lane, a context
// slot) and edges between them by operation id. Old entries are
// overwritten; an edge to an overwritten operation is dropped when a
// timeline is cut. Per lane, the window remembers its last operation and,
// for each lane it joined, the newest operation of that lane it drew an edge
// from, so a join that adds nothing new draws no second arrow. Memory is
// O(capacity + lanes * lanes joined); a timeline copies at most
// `ops_per_timeline` operations. The engine keeps no window unless asked
// (engine_options::timeline_window), so reports without pictures cost
// nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/engine/vector_clock.h"

namespace streamsan {

class operation_window {
 public:
  // `capacity` operations are kept (at least 2); a timeline shows at most
  // `ops_per_timeline` of them before and including the race's current one.
  operation_window(std::uint32_t capacity, std::uint32_t ops_per_timeline);

  // Adds an operation in `lane`; returns its id (1, 2, ...).
  std::uint64_t add(context_slot lane, const timeline_op& op);
  // An edge between two operations by id; none (0) is ignored.
  void edge(std::uint64_t from, std::uint64_t to, timeline_edge_kind kind);
  // An edge from the last operation of `from_lane` to `to`, unless an edge
  // from that operation (or a later one of the lane) into `to`'s lane was
  // drawn already.
  void join(context_slot from_lane, std::uint64_t to, timeline_edge_kind kind);

  // The lane's context died: a later owner of the slot starts a fresh
  // lane (its operations already in the ring keep their lane number).
  void forget_lane(context_slot lane) noexcept {
    if (lane < lanes_.size()) lanes_[lane] = lane_state{};
  }
  // The same, with `to` taking over the lane's last operation (a destroyed
  // stream's floor, Note [Retiring context slots]).
  void hand_over_lane(context_slot from, context_slot to);

  std::uint64_t last_in(context_slot lane) const noexcept {
    return lane < lanes_.size() ? lanes_[lane].last : 0;
  }

  // The timeline that ends at operation `current` (an id). The earlier
  // operation is looked up by sequence number in its lane; when it has left
  // the window, `previous_fallback` stands in for it.
  std::shared_ptr<race_timeline> cut(std::uint64_t current, std::uint64_t previous_seq,
                                     context_slot previous_lane,
                                     const timeline_op& previous_fallback) const;

  std::size_t bytes_held() const noexcept;

 private:
  struct entry {
    std::uint64_t id = 0;
    context_slot lane = 0;
    timeline_op op;
  };
  struct stored_edge {
    std::uint64_t from = 0;
    std::uint64_t to = 0;
    timeline_edge_kind kind = timeline_edge_kind::issue;
  };
  struct lane_state {
    std::uint64_t last = 0;
    std::vector<std::pair<context_slot, std::uint64_t>> joined;  // lane -> newest op joined
  };

  const entry* find(std::uint64_t id) const noexcept;
  lane_state& lane(context_slot slot);

  std::uint32_t ops_per_timeline_;
  std::vector<entry> ops_;          // ring, index = (id - 1) % capacity
  std::vector<stored_edge> edges_;  // ring
  std::uint64_t next_id_ = 1;
  std::uint64_t edges_added_ = 0;
  std::vector<lane_state> lanes_;
};

}  // namespace streamsan
