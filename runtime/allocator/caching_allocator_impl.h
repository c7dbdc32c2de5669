// The caching allocator's state and algorithm (the public face is
// runtime/caching_allocator.h). Every member function runs with
// session::mutex held.
//
// Note [Blocks, segments and pools]
// A segment is one backend allocation (cudaMalloc). It is cut into blocks,
// kept in address order; a block is free, allocated (handed to the program),
// or awaiting the events of its record_stream streams. Free blocks sit in a
// pool keyed by (stream, size): the small pool for requests up to 1 MiB
// (carved from 2 MiB segments), the large pool for the rest (20 MiB
// segments below 10 MiB, else rounded up to 2 MiB). A request is rounded to
// 512 bytes, served best-fit from the pool of its stream, and the rest of the
// block split off when it is worth keeping (small: >= 512 bytes; large:
// > 1 MiB). Freeing merges a block with free neighbours. Blocks are only
// ever reused on the stream they are cached for, which stream order makes
// safe; use on other streams must be declared with record_stream.
//
// Note [record_stream defers reuse through events]
// A block freed after record_stream(s) goes back to the pool only when the
// work s had at free time has completed: the allocator records an event on
// each such stream at free time and queries the events at later
// allocations (process_events). Both the records and the queries are logged
// (event_record, event_query with complete = true), so the engine sees the
// host become ordered after the other streams' use before the bytes are
// handed out again.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/backend/handles.h"
#include "runtime/memory_stats.h"
#include "sanitizer/log/ids.h"

namespace streamsan::rt {

class session;
struct stream_state;
class describe;

class caching_allocator_impl {
 public:
  explicit caching_allocator_impl(session& owner);
  ~caching_allocator_impl();
  caching_allocator_impl(const caching_allocator_impl&) = delete;
  caching_allocator_impl& operator=(const caching_allocator_impl&) = delete;

  struct handout {
    alloc_id id{};
    void* data = nullptr;
    std::uint64_t size = 0;  // the block's (rounded) size
  };

  handout allocate(std::uint64_t bytes, const stream_state& s, const describe& what);
  // Returns block `id` (a live handout) to the cache.
  void free(alloc_id id, const describe& what);
  void record_stream(alloc_id id, const stream_state& s, const describe& what);
  bool is_live_block(alloc_id id) const { return handed_out_.contains(id); }

  // empty_cache: waits for pending events, frees every segment with no
  // block in use. Devices: all when -1.
  void release_cached(int device);
  // Shutdown: frees every segment, in use or not.
  void release_all();

  void set_fraction(int device, double fraction);
  memory_stats stats(int device) const { return devices_.at(static_cast<std::size_t>(device)).stats; }
  void reset_peak(int device);
  std::string summary(int device) const;

 private:
  struct segment;
  struct block {
    segment* seg = nullptr;
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
    bool in_use = false;   // allocated, or awaiting record_stream events
    alloc_id id{};         // the handout id while allocated
    std::set<stream_id> uses;  // record_stream
    int pending_events = 0;
  };
  struct segment {
    alloc_id id{};
    int device = 0;
    stream_id stream{};
    void* base = nullptr;
    std::uint64_t size = 0;
    bool small = false;
    std::list<block> blocks;  // address order
  };
  using block_iter = std::list<block>::iterator;
  struct pool_order {
    bool operator()(const block* a, const block* b) const noexcept;
  };
  using pool = std::set<block*, pool_order>;
  struct internal_event {
    event_id id{};
    event_handle handle{};
  };
  struct pending_free {
    block* b = nullptr;
    int device = 0;
    internal_event event;
  };
  struct device_state {
    pool small_pool;
    pool large_pool;
    memory_stats stats;
    std::optional<std::uint64_t> limit;  // set_per_process_memory_fraction
    double fraction = 1.0;
    std::vector<internal_event> free_events;
  };

  void process_events();
  block* find_free(device_state& d, bool small, stream_id stream, std::uint64_t size);
  block* new_segment(int device, stream_id stream, std::uint64_t size, bool small);
  void free_block(block* b);
  void release_segments(int device, bool even_in_use);
  void synchronize_pending(int device);
  internal_event take_event(int device);
  pool& pool_of(const segment& s);

  session& owner_;
  std::vector<device_state> devices_;
  std::map<alloc_id, segment> segments_;
  std::unordered_map<alloc_id, block*> handed_out_;
  std::deque<pending_free> pending_;
};

}  // namespace streamsan::rt
