#include "runtime/sim/sim_memory.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "sanitizer/log/record.h"  // is_device_memory
#include "runtime/errors.h"

namespace streamsan::rt::sim {
namespace {

constexpr std::uint64_t alignment = 256;

std::uint64_t round_up(std::uint64_t bytes) {
  return bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
}

}  // namespace

sim_memory::sim_memory(int device_count, std::uint64_t bytes_per_device,
                       std::uint64_t quarantine_bytes)
    : bytes_per_device_(bytes_per_device),
      quarantine_limit_(quarantine_bytes),
      used_(static_cast<std::size_t>(device_count), 0) {}

sim_memory::~sim_memory() {
  for (const auto& [ptr, b] : live_) std::free(ptr);
  for (const auto& [ptr, bytes] : quarantine_) std::free(ptr);
}

void* sim_memory::allocate(memory_kind kind, int device, std::uint64_t bytes) {
  const auto size = round_up(bytes);
  const bool counted = is_device_memory(kind);
  auto& used = used_[static_cast<std::size_t>(device)];
  if (counted && size > bytes_per_device_ - used) return nullptr;
  void* ptr = std::aligned_alloc(alignment, size);
  if (ptr == nullptr) return nullptr;
  std::memset(ptr, 0, size);
  live_.emplace(ptr, block{size, device, counted});
  if (counted) used += size;
  return ptr;
}

void sim_memory::release(void* ptr, std::string_view call) {
  const auto it = live_.find(ptr);
  if (it == live_.end()) {
    throw cuda_error(error_code::invalid_value, call,
                     "the simulated device did not allocate this pointer (double free?)");
  }
  const block b = it->second;
  live_.erase(it);
  if (b.counted) used_[static_cast<std::size_t>(b.device)] -= b.bytes;
  std::memset(ptr, 0xff, b.bytes);
  quarantine_.emplace_back(ptr, b.bytes);
  quarantined_ += b.bytes;
  drain_quarantine();
}

void sim_memory::drain_quarantine() {
  while (quarantined_ > quarantine_limit_ && !quarantine_.empty()) {
    const auto [ptr, bytes] = quarantine_.front();
    quarantine_.pop_front();
    quarantined_ -= bytes;
    std::free(ptr);
  }
}

std::uint64_t sim_memory::used(int device) const { return used_[static_cast<std::size_t>(device)]; }

}  // namespace streamsan::rt::sim
