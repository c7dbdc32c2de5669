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
// driver hands the handle out again. No other state is keyed by handles.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace streamsan::injection {

template <class Id>
class handle_table {
 public:
  struct entry {
    Id id{};
    bool destroyed = false;
  };

  // Binds `handle` to `id` (a fresh id for a new object).
  void create(std::uintptr_t handle, Id id) { entries_[handle] = entry{id, false}; }

  // Marks the object destroyed; returns its id, nullopt for an unknown handle.
  std::optional<Id> destroy(std::uintptr_t handle) {
    const auto it = entries_.find(handle);
    if (it == entries_.end() || it->second.destroyed) return std::nullopt;
    it->second.destroyed = true;
    return it->second.id;
  }

  // The object the handle names now (or named last, if destroyed).
  const entry* find(std::uintptr_t handle) const {
    const auto it = entries_.find(handle);
    return it == entries_.end() ? nullptr : &it->second;
  }

  std::size_t size() const noexcept { return entries_.size(); }

 private:
  std::unordered_map<std::uintptr_t, entry> entries_;
};

}  // namespace streamsan::injection
