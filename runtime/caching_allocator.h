// The stream-aware caching allocator for device memory (S-MEM-1..4), in the
// manner of PyTorch's CUDA caching allocator: segments come from the backend
// (cudaMalloc), are split into blocks and merged back, and freed blocks are
// cached per (device, stream) for reuse without synchronizing. See
// docs/runtime.md, "The caching allocator".
//
// Note [Every reuse decision is in the access log]
// A segment is an alloc_record of kind device; each block handed out is a
// new alloc_record of kind cached_block with parent = segment, its offset
// and the stream it is cached for; returning a block to the cache is a
// free_record with mode cached. The events the allocator records for
// record_stream, and the queries that let it reuse a block, are ordinary
// event records. So the engine can check every reuse on the segment's byte
// history: a missing record_stream is reported as a race on the reused bytes.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/buffer_view.h"
#include "runtime/memory_stats.h"
#include "runtime/stream.h"

namespace streamsan::rt {

// A block from the caching allocator. Its destructor returns the block to
// the cache: immediately reusable on its own stream, and on streams passed to
// record_stream only once the work they had at free time has completed.
class cached_buffer : public buffer_view {
 public:
  cached_buffer() = default;
  cached_buffer(cached_buffer&& other) noexcept;
  cached_buffer& operator=(cached_buffer&& other) noexcept;
  cached_buffer(const cached_buffer&) = delete;
  cached_buffer& operator=(const cached_buffer&) = delete;
  ~cached_buffer() noexcept;

  buffer_view view() const noexcept { return *this; }
  // The stream the block was allocated for.
  stream_ref stream() const noexcept { return stream_; }
  // The block is also used on `s` (torch's Tensor.record_stream).
  void record_stream(stream_ref s) const;
  // Returns the block to the cache now (as the destructor does, but throws).
  void free();
  // Gives up ownership: the block stays allocated until the session ends.
  buffer_view release() noexcept;

 private:
  friend struct buffer_access;
  void reset() noexcept;

  stream_ref stream_;
  std::uint64_t session_ = 0;
};

// A block of at least `bytes` for use on `s` (the current stream if omitted),
// on s's device. out_of_memory_error after freeing cached blocks and
// retrying (S-MEM-4).
cached_buffer caching_allocate(std::uint64_t bytes, stream_ref s);
cached_buffer caching_allocate(std::uint64_t bytes);

// record_stream for the block `view` lies in. Any view into the block
// protects the whole block. usage_error when `view` is not in a live block.
void record_stream(const buffer_view& view, stream_ref s);

// Returns every unoccupied cached segment to the backend (S-MEM-3). Waits
// for pending record_stream events first (a synchronizing operation).
void empty_cache();

// Caps the allocator's reserved memory on `device` at fraction × total
// (S-MEM-4). fraction in [0, 1], else usage_error.
void set_per_process_memory_fraction(double fraction, int device = -1);

memory_stats get_memory_stats(int device = -1);
void reset_peak_memory_stats(int device = -1);
std::uint64_t memory_allocated(int device = -1);
std::uint64_t max_memory_allocated(int device = -1);
std::uint64_t memory_reserved(int device = -1);
std::uint64_t max_memory_reserved(int device = -1);

// A human-readable table of the statistics (torch.cuda.memory_summary).
std::string memory_summary(int device = -1);

}  // namespace streamsan::rt
