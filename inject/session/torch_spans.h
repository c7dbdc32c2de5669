// A span of the PyTorch support's C ABI (inject/session/torch_entry.cpp): an
// (address, bytes, mode word) triple, as the model's range.
#pragma once

#include <cstdint>

#include "include/streamsan/annotate.h"
#include "inject/model/cuda_model.h"

namespace streamsan::injection {

// Note [A span flagged as a hull] in torch_entry.cpp: the mode word's low
// bits are annotate.h's mode, span_hull marks a hull holding bytes the
// tensor does not.
inline constexpr std::uint64_t span_mode_bits = 0x3;
inline constexpr std::uint64_t span_hull = 0x100;

inline annotated_range torch_span(std::uint64_t address, std::uint64_t bytes,
                                  std::uint64_t mode_word) {
  access_mode mode = access_mode::read_write;
  switch (mode_word & span_mode_bits) {
    case STREAMSAN_READ: mode = access_mode::read; break;
    case STREAMSAN_WRITE: mode = access_mode::write; break;
    default: break;  // 3, and 0 (no caller sends it): both
  }
  const access_origin origin =
      (mode_word & span_hull) != 0 ? access_origin::inferred : access_origin::exact;
  return annotated_range{address, bytes, mode, origin};
}

}  // namespace streamsan::injection
