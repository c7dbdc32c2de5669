#include "runtime/allocator/caching_allocator_impl.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "runtime/session/session.h"

namespace streamsan::rt {
namespace {

constexpr std::uint64_t min_block_size = 512;
constexpr std::uint64_t small_size = std::uint64_t{1} << 20;         // 1 MiB
constexpr std::uint64_t small_buffer = std::uint64_t{2} << 20;       // 2 MiB
constexpr std::uint64_t large_buffer = std::uint64_t{20} << 20;      // 20 MiB
constexpr std::uint64_t min_large_alloc = std::uint64_t{10} << 20;   // 10 MiB
constexpr std::uint64_t round_large = std::uint64_t{2} << 20;        // 2 MiB

std::uint64_t round_size(std::uint64_t bytes) {
  if (bytes < min_block_size) return min_block_size;
  return (bytes + min_block_size - 1) / min_block_size * min_block_size;
}

std::uint64_t segment_size(std::uint64_t size) {
  if (size <= small_size) return small_buffer;
  if (size < min_large_alloc) return large_buffer;
  return (size + round_large - 1) / round_large * round_large;
}

void update(memory_stat& s, std::int64_t delta) {
  s.current += delta;
  if (delta > 0) s.allocated += delta; else s.freed -= delta;
  s.peak = std::max(s.peak, s.current);
}

std::string format_bytes(std::uint64_t bytes) {
  char text[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (std::uint64_t{1} << 30)) {
    std::snprintf(text, sizeof text, "%.2f GiB", b / double(1u << 30));
  } else if (bytes >= (std::uint64_t{1} << 20)) {
    std::snprintf(text, sizeof text, "%.2f MiB", b / double(1u << 20));
  } else if (bytes >= 1024) {
    std::snprintf(text, sizeof text, "%.2f KiB", b / 1024.0);
  } else {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  }
  return text;
}

}  // namespace

bool caching_allocator_impl::pool_order::operator()(const block* a, const block* b) const noexcept {
  if (a->seg->stream != b->seg->stream) return a->seg->stream < b->seg->stream;
  if (a->size != b->size) return a->size < b->size;
  if (a->seg->id != b->seg->id) return a->seg->id < b->seg->id;
  return a->offset < b->offset;
}

caching_allocator_impl::caching_allocator_impl(session& owner)
    : owner_(owner), devices_(static_cast<std::size_t>(owner.device_count)) {}

caching_allocator_impl::~caching_allocator_impl() = default;

caching_allocator_impl::pool& caching_allocator_impl::pool_of(const segment& s) {
  auto& d = devices_[static_cast<std::size_t>(s.device)];
  return s.small ? d.small_pool : d.large_pool;
}

caching_allocator_impl::handout caching_allocator_impl::allocate(std::uint64_t bytes,
                                                                 const stream_state& s,
                                                                 const describe& what) {
  process_events();
  const int device = s.device;
  auto& d = devices_[static_cast<std::size_t>(device)];
  const auto size = round_size(bytes);
  const bool small = size <= small_size;

  block* b = find_free(d, small, s.id, size);
  if (b == nullptr) {
    const auto want = segment_size(size);
    b = new_segment(device, s.id, want, small);
    if (b == nullptr) {
      // Free what the cache holds and try once more (S-MEM-4).
      d.stats.num_alloc_retries += 1;
      release_cached(device);
      b = new_segment(device, s.id, want, small);
    }
    if (b == nullptr) {
      d.stats.num_ooms += 1;
      std::ostringstream message;
      message << "tried to allocate " << format_bytes(bytes) << " (" << bytes
              << " bytes) on device " << device << " for " << to_string(s.id) << "; ";
      if (d.limit) {
        message << "the allocator is limited to " << format_bytes(*d.limit)
                << " by set_per_process_memory_fraction(" << d.fraction << ") of "
                << format_bytes(owner_.device->properties(device).total_memory) << "; ";
      } else {
        const auto info = owner_.device->mem_get_info(device);
        message << "the device has " << format_bytes(info.free) << " free of "
                << format_bytes(info.total) << "; ";
      }
      message << format_bytes(static_cast<std::uint64_t>(d.stats.reserved_bytes.current))
              << " reserved, "
              << format_bytes(static_cast<std::uint64_t>(d.stats.allocated_bytes.current))
              << " allocated";
      throw out_of_memory_error(what(), message.str());
    }
  } else {
    pool_of(*b->seg).erase(b);
  }

  // Split off the rest when it is worth keeping (Note [Blocks, segments and pools]).
  const auto remaining = b->size - size;
  if (small ? remaining >= min_block_size : remaining > small_size) {
    auto& blocks = b->seg->blocks;
    auto it = std::find_if(blocks.begin(), blocks.end(), [&](const block& x) { return &x == b; });
    block rest;
    rest.seg = b->seg;
    rest.offset = b->offset + size;
    rest.size = remaining;
    auto rest_it = blocks.insert(std::next(it), rest);
    b->size = size;
    pool_of(*b->seg).insert(&*rest_it);
  }

  b->in_use = true;
  b->id = owner_.log.new_alloc_id();
  handed_out_.emplace(b->id, b);
  const auto block_bytes = static_cast<std::int64_t>(b->size);
  update(d.stats.allocation, 1);
  update(d.stats.allocated_bytes, block_bytes);
  update(d.stats.active, 1);
  update(d.stats.active_bytes, block_bytes);

  void* data = static_cast<char*>(b->seg->base) + b->offset;
  if (owner_.logging()) {
    owner_.emit(alloc_record{b->id, memory_kind::cached_block, device, b->size,
                             reinterpret_cast<std::uint64_t>(data), s.id, b->seg->id, b->offset,
                             string_id{}});
  }
  return {b->id, data, b->size};
}

caching_allocator_impl::block* caching_allocator_impl::find_free(device_state& d, bool small,
                                                                 stream_id stream,
                                                                 std::uint64_t size) {
  auto& p = small ? d.small_pool : d.large_pool;
  segment key_segment;
  key_segment.stream = stream;
  block key;
  key.seg = &key_segment;
  key.size = size;
  const auto it = p.lower_bound(&key);
  if (it == p.end() || (*it)->seg->stream != stream) return nullptr;
  return *it;
}

caching_allocator_impl::block* caching_allocator_impl::new_segment(int device, stream_id stream,
                                                                   std::uint64_t size, bool small) {
  auto& d = devices_[static_cast<std::size_t>(device)];
  const auto reserved = static_cast<std::uint64_t>(d.stats.reserved_bytes.current);
  if (d.limit && reserved + size > *d.limit) return nullptr;
  void* base = owner_.device->allocate(memory_kind::device, device, size, device_stream{});
  if (base == nullptr) return nullptr;

  const auto id = owner_.log.new_alloc_id();
  auto& seg = segments_[id];
  seg.id = id;
  seg.device = device;
  seg.stream = stream;
  seg.base = base;
  seg.size = size;
  seg.small = small;
  block whole;
  whole.seg = &seg;
  whole.size = size;
  seg.blocks.push_back(whole);
  update(d.stats.segment, 1);
  update(d.stats.reserved_bytes, static_cast<std::int64_t>(size));
  if (owner_.logging()) {
    owner_.emit(alloc_record{id, memory_kind::device, device, size,
                             reinterpret_cast<std::uint64_t>(base), stream_id{}, alloc_id{}, 0,
                             string_id{}});
  }
  return &seg.blocks.back();
}

void caching_allocator_impl::free(alloc_id id, const describe& what) {
  const auto it = handed_out_.find(id);
  if (it == handed_out_.end()) {
    throw usage_error(what() + ": " + to_string(id) + " is not a live caching-allocator block");
  }
  block* b = it->second;
  handed_out_.erase(it);
  auto& d = devices_[static_cast<std::size_t>(b->seg->device)];
  update(d.stats.allocation, -1);
  update(d.stats.allocated_bytes, -static_cast<std::int64_t>(b->size));
  if (owner_.logging()) owner_.emit(free_record{id, free_mode::cached, stream_id{}});
  b->id = alloc_id{};

  // Note [record_stream defers reuse through events]
  for (const auto stream : b->uses) {
    const auto s = owner_.streams.find(stream);
    if (s == owner_.streams.end()) continue;  // destroyed: its work completes on its own
    const auto event = take_event(b->seg->device);
    owner_.device->record_event(event.handle, s->second.target());
    if (owner_.logging()) owner_.emit(event_record{event.id, stream});
    pending_.push_back({b, b->seg->device, event});
    ++b->pending_events;
  }
  b->uses.clear();
  if (b->pending_events == 0) free_block(b);
}

void caching_allocator_impl::record_stream(alloc_id id, const stream_state& s,
                                           const describe& what) {
  const auto it = handed_out_.find(id);
  if (it == handed_out_.end()) {
    throw usage_error(what() + ": " + to_string(id) + " is not a live caching-allocator block");
  }
  block* b = it->second;
  if (s.id == b->seg->stream) return;  // stream order already protects it
  b->uses.insert(s.id);
}

void caching_allocator_impl::free_block(block* b) {
  auto& d = devices_[static_cast<std::size_t>(b->seg->device)];
  update(d.stats.active, -1);
  update(d.stats.active_bytes, -static_cast<std::int64_t>(b->size));
  b->in_use = false;
  auto& blocks = b->seg->blocks;
  auto& p = pool_of(*b->seg);
  auto it = std::find_if(blocks.begin(), blocks.end(), [&](const block& x) { return &x == b; });
  // Merge with free neighbours.
  if (it != blocks.begin()) {
    auto prev = std::prev(it);
    if (!prev->in_use) {
      p.erase(&*prev);
      b->offset = prev->offset;
      b->size += prev->size;
      blocks.erase(prev);
    }
  }
  if (auto next = std::next(it); next != blocks.end() && !next->in_use) {
    p.erase(&*next);
    b->size += next->size;
    blocks.erase(next);
  }
  p.insert(b);
}

caching_allocator_impl::internal_event caching_allocator_impl::take_event(int device) {
  auto& pool = devices_[static_cast<std::size_t>(device)].free_events;
  if (!pool.empty()) {
    const auto e = pool.back();
    pool.pop_back();
    return e;
  }
  internal_event e{owner_.log.new_event_id(), owner_.device->create_event(device, event_flag_none)};
  if (owner_.logging()) owner_.emit(event_create{e.id, event_flag_none});
  return e;
}

void caching_allocator_impl::process_events() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    const bool complete = owner_.device->query_event(it->event.handle);
    if (owner_.logging()) owner_.emit(event_query{it->event.id, complete});
    if (!complete) {
      ++it;
      continue;
    }
    devices_[static_cast<std::size_t>(it->device)].free_events.push_back(it->event);
    block* b = it->b;
    it = pending_.erase(it);
    if (--b->pending_events == 0) free_block(b);
  }
}

void caching_allocator_impl::synchronize_pending(int device) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (device != -1 && it->device != device) {
      ++it;
      continue;
    }
    owner_.device->synchronize_event(it->event.handle);
    if (owner_.logging()) owner_.emit(event_synchronize{it->event.id});
    devices_[static_cast<std::size_t>(it->device)].free_events.push_back(it->event);
    block* b = it->b;
    it = pending_.erase(it);
    if (--b->pending_events == 0) free_block(b);
  }
}

void caching_allocator_impl::release_cached(int device) {
  synchronize_pending(device);
  release_segments(device, false);
}

void caching_allocator_impl::release_all() {
  synchronize_pending(-1);
  release_segments(-1, true);
  handed_out_.clear();
}

void caching_allocator_impl::release_segments(int device, bool even_in_use) {
  for (auto it = segments_.begin(); it != segments_.end();) {
    auto& seg = it->second;
    const bool unused = seg.blocks.size() == 1 && !seg.blocks.front().in_use;
    if ((device != -1 && seg.device != device) || (!unused && !even_in_use)) {
      ++it;
      continue;
    }
    auto& p = pool_of(seg);
    for (auto& b : seg.blocks) p.erase(&b);
    owner_.device->deallocate(memory_kind::device, seg.device, seg.base, device_stream{});
    if (owner_.logging()) owner_.emit(free_record{seg.id, free_mode::synchronizing, stream_id{}});
    auto& d = devices_[static_cast<std::size_t>(seg.device)];
    update(d.stats.segment, -1);
    update(d.stats.reserved_bytes, -static_cast<std::int64_t>(seg.size));
    it = segments_.erase(it);
  }
}

void caching_allocator_impl::set_fraction(int device, double fraction) {
  auto& d = devices_[static_cast<std::size_t>(device)];
  const auto total = owner_.device->properties(device).total_memory;
  d.fraction = fraction;
  d.limit = static_cast<std::uint64_t>(fraction * static_cast<double>(total));
}

void caching_allocator_impl::reset_peak(int device) {
  auto& s = devices_[static_cast<std::size_t>(device)].stats;
  for (auto* stat : {&s.allocation, &s.segment, &s.active, &s.allocated_bytes, &s.reserved_bytes,
                     &s.active_bytes}) {
    stat->peak = stat->current;
  }
}

std::string caching_allocator_impl::summary(int device) const {
  const auto& d = devices_.at(static_cast<std::size_t>(device));
  const auto& s = d.stats;
  std::ostringstream out;
  char line[160];
  const auto rule = std::string(77, '=');
  out << rule << '\n';
  std::snprintf(line, sizeof line, " streamsan caching allocator, device %d", device);
  out << line << '\n' << rule << '\n';
  std::snprintf(line, sizeof line, " %-20s | %12s | %12s | %12s | %12s", "Metric", "Cur Usage",
                "Peak Usage", "Tot Alloc", "Tot Freed");
  out << line << '\n' << std::string(77, '-') << '\n';
  const auto bytes_row = [&](const char* name, const memory_stat& m) {
    std::snprintf(line, sizeof line, " %-20s | %12s | %12s | %12s | %12s", name,
                  format_bytes(static_cast<std::uint64_t>(m.current)).c_str(),
                  format_bytes(static_cast<std::uint64_t>(m.peak)).c_str(),
                  format_bytes(static_cast<std::uint64_t>(m.allocated)).c_str(),
                  format_bytes(static_cast<std::uint64_t>(m.freed)).c_str());
    out << line << '\n';
  };
  const auto count_row = [&](const char* name, const memory_stat& m) {
    std::snprintf(line, sizeof line, " %-20s | %12lld | %12lld | %12lld | %12lld", name,
                  static_cast<long long>(m.current), static_cast<long long>(m.peak),
                  static_cast<long long>(m.allocated), static_cast<long long>(m.freed));
    out << line << '\n';
  };
  bytes_row("Allocated memory", s.allocated_bytes);
  bytes_row("Active memory", s.active_bytes);
  bytes_row("Reserved memory", s.reserved_bytes);
  count_row("Allocations", s.allocation);
  count_row("Active allocs", s.active);
  count_row("Segments", s.segment);
  out << std::string(77, '-') << '\n';
  std::snprintf(line, sizeof line, " Alloc retries: %llu   OOMs: %llu",
                static_cast<unsigned long long>(s.num_alloc_retries),
                static_cast<unsigned long long>(s.num_ooms));
  out << line << '\n';
  if (d.limit) {
    out << " Memory fraction: " << d.fraction << " (limit " << format_bytes(*d.limit) << ")\n";
  }
  out << rule << '\n';
  return out.str();
}

}  // namespace streamsan::rt
