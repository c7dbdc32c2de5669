#include "sanitizer/engine/context_table.h"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>

namespace streamsan {
namespace {

// Components of free slots mean nothing (Note [Retiring context slots],
// rule 5); capacity is given back once it is well over what is used.
void trim(std::vector<std::uint64_t>& v, std::size_t size) {
  if (v.size() > size) v.resize(size);
  if (v.capacity() > 2 * v.size() + 16) v.shrink_to_fit();
}

}  // namespace

// ---- sweeps ----

slot_sweep::slot_sweep(context_table& table, std::uint64_t serial)
    : table_(table), serial_(serial), pinned_(table.slots_.size(), false) {}

slot_owner* slot_sweep::owner_of(epoch e) noexcept {
  return const_cast<slot_owner*>(std::as_const(table_).owner_of(e));
}

void slot_sweep::pin(epoch e) noexcept {
  if (e.is_none()) return;
  ++visited_;
  if (e.slot() < pinned_.size()) pinned_[e.slot()] = true;
  if (slot_owner* o = owner_of(e)) o->named_in_sweep = serial_;
}

std::size_t context_table::finish_sweep(slot_sweep& s) {
  // Rule 3: a dead context's slot nothing stored names is free from now on.
  std::erase_if(dead_, [&](context_slot slot) {
    if (s.pinned_[slot]) return false;
    slot_record& r = slots_[slot];
    r.dead = false;
    r.free = true;
    free_.push_back(slot);
    std::push_heap(free_.begin(), free_.end(), std::greater<>{});
    ++retired_;
    return true;
  });
  // Rule 4: the journal keeps live owners and owners something still names.
  for (slot_record& r : slots_) {
    std::erase_if(r.owners, [&](const slot_owner& o) {
      return o.last != slot_owner::alive && o.named_in_sweep != s.serial_;
    });
  }
  // Rule 5: clocks need components up to the highest slot not free.
  std::size_t used = slots_.size();
  while (used > 0 && slots_[used - 1].free) --used;
  for (slot_record& r : slots_) {
    if (!r.context) continue;
    r.context->clock.truncate(used);
    trim(r.context->seen, used);
  }
  deaths_since_sweep_ = 0;
  last_sweep_visits_ = s.visited_;
  return used;
}

// ---- slots and contexts ----

context_slot context_table::take_slot() {
  if (!free_.empty()) {
    std::pop_heap(free_.begin(), free_.end(), std::greater<>{});
    const context_slot slot = free_.back();
    free_.pop_back();
    return slot;
  }
  if (slots_.size() > epoch::max_slot) {
    // 16 million streams and threads alive (or dead and still named by
    // stored accesses) at once: epochs cannot name more. A log like that is
    // corrupt or pathological; refuse it loudly rather than alias.
    throw std::length_error("streamsan engine: more than " + std::to_string(epoch::max_slot) +
                            " streams and host threads in use at once");
  }
  slots_.emplace_back();
  return static_cast<context_slot>(slots_.size() - 1);
}

execution_context& context_table::new_context(context_kind kind, std::uint32_t id,
                                              const execution_context* creator) {
  const context_slot slot = take_slot();
  slot_record& r = slots_[slot];
  r.context = std::make_unique<execution_context>();
  execution_context& c = *r.context;
  c.kind = kind;
  c.id = id;
  c.slot = slot;
  if (creator != nullptr) {
    // Note [Streams start from their creator's clock]
    c.clock = creator->clock;
    c.seen.assign(creator->seen.begin(), creator->seen.end());
    if (creator->slot >= c.seen.size()) c.seen.resize(std::size_t{creator->slot} + 1, 0);
    c.seen[creator->slot] = creator->version;
  }
  // Rule 2: the new owner's operations come after every epoch the slot
  // ever had.
  if (r.high > 0) c.clock.set(slot, r.high);
  c.clock.make_present(slot);  // Note [A context's own component is always there]
  c.version = ++last_version_;
  r.owner_since = c.version;
  r.owners.push_back(slot_owner{r.high + 1, slot_owner::alive, kind, id, 0});
  r.dead = false;
  r.free = false;
  ++live_;
  return c;
}

void context_table::kill(execution_context& c) {
  slot_record& r = slots_[c.slot];
  const std::uint64_t own = c.clock.get(c.slot);
  r.high = std::max(r.high, own);
  slot_owner& o = r.owners.back();
  o.last = own;
  --live_;
  const context_slot slot = c.slot;
  r.context.reset();
  if (o.last < o.first && sweep_batch_ != 0) {
    // It never ticked: no epoch of it exists, and the slot's earlier
    // owners were unnamed when it got the slot. Free at once.
    r.owners.pop_back();
    r.free = true;
    free_.push_back(slot);
    std::push_heap(free_.begin(), free_.end(), std::greater<>{});
    ++retired_;
    return;
  }
  r.dead = true;
  dead_.push_back(slot);
  ++deaths_since_sweep_;
}

const slot_owner* context_table::owner_of(epoch e) const noexcept {
  if (e.is_none() || e.slot() >= slots_.size()) return nullptr;
  const auto& owners = slots_[e.slot()].owners;
  const std::uint64_t c = e.clock();
  // Owners are in epoch order: the last one starting at or before c.
  auto it = std::upper_bound(owners.begin(), owners.end(), c,
                             [](std::uint64_t v, const slot_owner& o) { return v < o.first; });
  if (it == owners.begin()) return nullptr;
  --it;
  return c <= it->last ? &*it : nullptr;
}

// ---- threads and streams ----

thread_state& context_table::thread(thread_id id) {
  thread_state& t = threads_.get_or_insert(id);
  if (t.context == nullptr) {
    t.context = &new_context(context_kind::host_thread, raw(id), nullptr);
  }
  return t;
}

void context_table::exit_thread(thread_id id) {
  thread_state* t = threads_.find(id);
  if (t == nullptr) return;
  kill(*t->context);
  threads_.erase(id);
}

stream_state& context_table::create_stream(stream_id id, std::int32_t device,
                                           stream_flavor flavor,
                                           execution_context& creator) {
  stream_state& s = streams_.get_or_insert(id);
  s.id = id;
  s.context = &new_context(context_kind::stream, raw(id), &creator);
  s.device_index = device;
  s.device = &devices_[device];
  s.flavor = flavor;
  s.device->streams.push_back(s.context);
  // Note [Legacy default stream]
  // S-DEFAULT-1: an operation on the legacy default stream waits for all
  // prior work on the blocking streams of its device, and an operation on a
  // blocking stream waits for all prior legacy-stream work. Joining the
  // other side's whole clock at enqueue time models exactly that (and is
  // transitive: legacy work that waited for stream A is ordered before later
  // work on stream B). The per-thread default stream is a blocking stream
  // (S-DEFAULT-3); non-blocking streams take part in neither direction
  // (S-DEFAULT-2). Event records and waits are stream operations too, so an
  // event recorded on the legacy stream captures the blocking streams' prior
  // work. Destroyed streams take part through their class's floor.
  switch (flavor) {
    case stream_flavor::blocking:
    case stream_flavor::per_thread_default:
      s.device->blocking.push_back(s.context);
      s.implicit_sources = &s.device->legacy;
      break;
    case stream_flavor::legacy_default:
      s.device->legacy.push_back(s.context);
      s.implicit_sources = &s.device->blocking;
      break;
    case stream_flavor::non_blocking:
      break;
  }
  if (observer_ != nullptr) {
    observer_->stream_created(s.context->ref(), device, flavor, creator.ref());
  }
  return s;
}

void context_table::announce_join(const execution_context& dst, const execution_context& src) {
  observer_->joined(dst.ref(), src.ref());
}

execution_context& context_table::floor_for(device_state& d, stream_flavor flavor) {
  execution_context** floor = &d.other_floor;
  context_list* list = nullptr;
  switch (flavor) {
    case stream_flavor::blocking:
    case stream_flavor::per_thread_default:
      floor = &d.blocking_floor;
      list = &d.blocking;
      break;
    case stream_flavor::legacy_default:
      floor = &d.legacy_floor;
      list = &d.legacy;
      break;
    case stream_flavor::non_blocking:
      break;
  }
  if (*floor == nullptr) {
    *floor = &new_context(context_kind::stream, 0, nullptr);
    --live_;
    ++floors_;
    d.streams.push_back(*floor);
    if (list != nullptr) list->push_back(*floor);
  }
  return **floor;
}

const execution_context* context_table::destroy_stream(stream_state& s) {
  s.destroyed = true;
  if (s.context == nullptr) return nullptr;
  execution_context& c = *s.context;
  device_state& d = *s.device;
  const auto drop = [&](context_list& list) { std::erase(list, &c); };
  drop(d.streams);
  drop(d.blocking);
  drop(d.legacy);
  // Rule 1: S-STREAM-9, its pending work still completes and still counts.
  execution_context& floor = floor_for(d, s.flavor);
  join(floor, c);
  s.context = nullptr;
  kill(c);
  return &floor;
}

device_state* context_table::find_device(std::int32_t device) noexcept {
  const auto it = devices_.find(device);
  return it == devices_.end() ? nullptr : &it->second;
}

void context_table::join_slow(execution_context& dst, const vector_clock& src,
                              context_slot src_slot, std::uint64_t src_version) {
  if (dst.clock.join(src)) dst.version = ++last_version_;
  if (src_slot >= dst.seen.size()) dst.seen.resize(std::size_t{src_slot} + 1, 0);
  dst.seen[src_slot] = std::max(dst.seen[src_slot], src_version);
}

// ---- accounting ----

context_counts context_table::counts() const noexcept {
  context_counts c;
  c.live = live_;
  c.floors = floors_;
  c.dead = dead_.size();
  c.slots = slots_.size();
  c.free_slots = free_.size();
  c.retired = retired_;
  c.sweeps = sweeps_;
  return c;
}

std::size_t context_table::bytes_held() const noexcept {
  std::size_t bytes = slots_.capacity() * sizeof(slot_record) +
                      (free_.capacity() + dead_.capacity()) * sizeof(context_slot);
  for (const slot_record& r : slots_) {
    bytes += r.owners.capacity() * sizeof(slot_owner);
    if (!r.context) continue;
    bytes += sizeof(execution_context) + r.context->clock.bytes_held() +
             r.context->seen.capacity() * sizeof(std::uint64_t);
  }
  return bytes;
}

}  // namespace streamsan
