// Caching allocator statistics (S-MEM-2), per device, in the shape of
// torch.cuda.memory_stats.
#pragma once

#include <cstdint>

namespace streamsan::rt {

struct memory_stat {
  std::int64_t current = 0;
  std::int64_t peak = 0;       // since start or reset_peak_memory_stats
  std::int64_t allocated = 0;  // total increases
  std::int64_t freed = 0;      // total decreases
};

struct memory_stats {
  // Counts.
  memory_stat allocation;  // blocks handed to the program, not yet freed
  memory_stat segment;     // segments held from the backend
  memory_stat active;      // allocated blocks + freed blocks still awaiting record_stream events
  // Bytes (block sizes after rounding).
  memory_stat allocated_bytes;  // memory_allocated
  memory_stat reserved_bytes;   // memory_reserved: segments, live + cached
  memory_stat active_bytes;
  // Allocations that freed cached blocks and retried the backend.
  std::uint64_t num_alloc_retries = 0;
  // Allocations that failed with out_of_memory_error.
  std::uint64_t num_ooms = 0;
};

}  // namespace streamsan::rt
