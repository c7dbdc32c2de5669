// CUDA handle -> strong id, for handles whose lifetime the library sees
// (streams, events, graphs, executable graphs).
//
// Note [Handles are translated at the boundary]
// The driver recycles handles: a stream destroyed and created again often
// comes back with the same cudaStream_t. The table maps a handle to the id of
// the object that holds it *now*: create() always assigns a fresh id, so a
// recycled handle is a new object. destroy() leaves a tombstone so that a use
// of the destroyed handle is still attributed to the destroyed object (the
// engine reports destroyed_stream_use / destroyed_event_use) until the
// driver hands the handle out again, or until `tombstone_capacity` objects
// destroyed later pushed it out (oldest first): memory is bounded by the live
// handles plus that many, however many objects a program makes. No other
// state is keyed by handles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>

#include "inject/model/recent_pointers.h"

namespace streamsan::injection {

template <class Id>
class handle_table {
 public:
  struct entry {
    Id id{};
    bool destroyed = false;
  };

  explicit handle_table(std::size_t tombstone_capacity = 1024)
      : tombstone_capacity_(tombstone_capacity) {}

  // Binds `handle` to `id` (a fresh id for a new object).
  void create(std::uintptr_t handle, Id id) { entries_[handle] = entry{id, false}; }

  // Marks the object destroyed; returns its id, nullopt for an unknown handle.
  std::optional<Id> destroy(std::uintptr_t handle) {
    const auto it = entries_.find(handle);
    if (it == entries_.end() || it->second.destroyed) return std::nullopt;
    it->second.destroyed = true;
    tombstones_.emplace_back(handle, it->second.id);
    if (tombstones_.size() > tombstone_capacity_) forget_oldest_tombstone();
    return it->second.id;
  }

  // The object the handle names now (or named last, if destroyed).
  const entry* find(std::uintptr_t handle) const {
    if (const entry* e = recent_.find(handle)) return e;
    const auto it = entries_.find(handle);
    if (it == entries_.end()) return nullptr;
    recent_.remember(handle, &it->second);
    return &it->second;
  }

  // find()'s answer when its recent slot has it (Note [Recent handles]),
  // else null: then find() answers.
  const entry* recent(std::uintptr_t handle) const noexcept { return recent_.find(handle); }

  // Handles known: the live ones and the tombstones.
  std::size_t size() const noexcept { return entries_.size(); }

 private:
  void forget_oldest_tombstone() {
    const auto [handle, id] = tombstones_.front();
    tombstones_.pop_front();
    // The handle may have been handed out again since (a live entry now).
    const auto it = entries_.find(handle);
    if (it != entries_.end() && it->second.destroyed && it->second.id == id) {
      recent_.forget(handle);
      entries_.erase(it);
    }
  }

  // Note [Recent handles]
  // Every launch, copy and event call finds its stream (and event) here,
  // and between two launches the driver's launch path evicts the hash
  // table's bucket array and nodes (Note [Our launch path with cold
  // caches] in bench/injection/source_bench.cpp); the bucket's index is
  // also a division. So find() remembers its hits in a small direct-mapped
  // table (recent_pointers.h). Entries are nodes of the map, which stay
  // where they are until erased, and a create or destroy of the same
  // handle changes the entry in place, so a slot is right until its entry
  // is erased (a tombstone pushed out), which forgets it. A miss is never
  // remembered: a handle not known now may be created at any time.
  std::unordered_map<std::uintptr_t, entry> entries_;
  std::deque<std::pair<std::uintptr_t, Id>> tombstones_;  // oldest first
  std::size_t tombstone_capacity_;
  mutable recent_pointers<const entry> recent_;  // under the owner's lock, as the map
};

}  // namespace streamsan::injection
