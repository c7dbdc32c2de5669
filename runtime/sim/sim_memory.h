// The simulated device's memory: every kind is host memory (so the kernel
// library can run on it), with per-device accounting for the device-like
// kinds and a quarantine for freed memory.
//
// Freed memory is filled with 0xff bytes (a float NaN) and kept in a FIFO
// quarantine before it goes back to the host heap, so that a use after
// free on the simulated device reads garbage (or writes into dead memory)
// instead of corrupting the heap or crashing the test. This table is the
// device's own heap, so it is keyed by address, as a real device's is.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "sanitizer/log/record.h"

namespace streamsan::rt::sim {

class sim_memory {
 public:
  sim_memory(int device_count, std::uint64_t bytes_per_device, std::uint64_t quarantine_bytes);
  ~sim_memory();
  sim_memory(const sim_memory&) = delete;
  sim_memory& operator=(const sim_memory&) = delete;

  // Zero-filled, 256-byte aligned; nullptr when a device-like kind would
  // exceed the device's memory.
  void* allocate(memory_kind kind, int device, std::uint64_t bytes);
  // Poisons and quarantines; throws cuda_error for a pointer it did not hand out.
  void release(void* ptr, std::string_view call);

  std::uint64_t used(int device) const;
  std::uint64_t total() const noexcept { return bytes_per_device_; }

 private:
  struct block {
    std::uint64_t bytes = 0;
    int device = 0;
    bool counted = false;  // device-like: counts against the device's memory
  };

  void drain_quarantine();

  std::uint64_t bytes_per_device_;
  std::uint64_t quarantine_limit_;
  std::unordered_map<void*, block> live_;
  std::deque<std::pair<void*, std::uint64_t>> quarantine_;
  std::uint64_t quarantined_ = 0;
  std::vector<std::uint64_t> used_;
};

}  // namespace streamsan::rt::sim
