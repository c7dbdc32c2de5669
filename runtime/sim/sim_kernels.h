// The kernel library on host memory, for the simulated device.
#pragma once

#include <cstdint>

#include "runtime/backend/kernel_args.h"

namespace streamsan::rt::sim {

void run_kernel(const kernel_args& args);

// Simulated duration: a launch overhead plus one nanosecond per element, or
// the requested time for spin.
std::uint64_t kernel_duration_ns(const kernel_args& args);

}  // namespace streamsan::rt::sim
