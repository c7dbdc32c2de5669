#include "sanitizer/engine/context_table.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace streamsan {

execution_context& context_table::new_context(context_kind kind, std::uint32_t id) {
  if (contexts_.size() > epoch::max_slot) {
    // 16 million streams and threads: epochs cannot name more. A log like
    // that is corrupt or pathological; refuse it loudly rather than alias.
    throw std::length_error("streamsan engine: more than " +
                            std::to_string(epoch::max_slot) +
                            " streams and host threads in one log");
  }
  auto& c = contexts_.emplace_back();
  c.kind = kind;
  c.id = id;
  c.slot = static_cast<context_slot>(contexts_.size() - 1);
  c.version = ++last_version_;
  return c;
}

thread_state& context_table::thread(thread_id id) {
  thread_state& t = threads_.get_or_insert(id);
  if (t.context == nullptr) t.context = &new_context(context_kind::host_thread, raw(id));
  return t;
}

stream_state& context_table::create_stream(stream_id id, std::int32_t device,
                                           stream_flavor flavor,
                                           const execution_context& creator) {
  stream_state& s = streams_.get_or_insert(id);
  s.context = &new_context(context_kind::stream, raw(id));
  // Note [Streams start from their creator's clock]
  s.context->clock = creator.clock;
  s.context->seen.assign(creator.seen.begin(), creator.seen.end());
  if (creator.slot >= s.context->seen.size()) s.context->seen.resize(creator.slot + 1, 0);
  s.context->seen[creator.slot] = creator.version;
  s.device_index = device;
  s.device = &devices_[device];
  s.flavor = flavor;
  s.device->streams.push_back(s.context->slot);
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
  // work.
  switch (flavor) {
    case stream_flavor::blocking:
    case stream_flavor::per_thread_default:
      s.device->blocking.push_back(s.context->slot);
      s.implicit_sources = &s.device->legacy;
      break;
    case stream_flavor::legacy_default:
      s.device->legacy.push_back(s.context->slot);
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

std::size_t context_table::bytes_held() const noexcept {
  std::size_t bytes = contexts_.size() * sizeof(execution_context);
  for (const auto& c : contexts_) {
    bytes += c.clock.bytes_held() + c.seen.capacity() * sizeof(std::uint64_t);
  }
  return bytes;
}

}  // namespace streamsan
