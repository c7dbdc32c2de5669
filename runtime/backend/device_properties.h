// What a backend reports about a device (S-DEV-2).
#pragma once

#include <cstdint>
#include <string>

namespace streamsan::rt {

struct device_properties {
  std::string name;                // "NVIDIA H100 80GB HBM3", "streamsan sim device 0"
  int major = 0;                   // compute capability
  int minor = 0;
  std::uint64_t total_memory = 0;  // bytes
  int multi_processor_count = 0;
  bool concurrent_managed_access = false;  // S-MEM-6
  bool is_integrated = false;
};

struct memory_info {
  std::uint64_t free = 0;   // bytes
  std::uint64_t total = 0;  // bytes
};

// Lower numbers are higher priorities (S-STREAM-7): greatest <= least.
struct priority_range {
  int least = 0;
  int greatest = 0;
};

}  // namespace streamsan::rt
