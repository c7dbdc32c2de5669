// The steady clock's nanoseconds since a moment, as the debug counters sum
// them (the engine thread's busy time, the exit's waits, the read-back's
// copies and decodes).
#pragma once

#include <chrono>
#include <cstdint>

namespace streamsan {

inline std::uint64_t nanoseconds_since(std::chrono::steady_clock::time_point start) noexcept {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now() - start)
                                        .count());
}

}  // namespace streamsan
