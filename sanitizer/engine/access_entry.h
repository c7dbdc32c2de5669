// One stored access of an access history (access_history.h).
#pragma once

#include <cstdint>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/engine/vector_clock.h"
#include "sanitizer/log/record.h"

namespace streamsan {

// Who made an access: its epoch (for ordering) and what a report needs to
// describe it. The stream or thread follows from the epoch's slot.
struct access_entry {
  epoch when;
  std::uint64_t seq = 0;
  std::uint64_t offset = 0;  // the access's range, relative to `alloc`
  std::uint64_t size = 0;
  alloc_id alloc{};
  string_id name{};
  stack_id stack{};
  string_id nvtx{};
  thread_id thread{};
  graph_id graph{};
  std::uint32_t graph_node = 0;
  operation_kind op = operation_kind::kernel;
  access_mode mode = access_mode::read;
  access_origin origin = access_origin::exact;
  // A kernel of a cooperative launch (Note [Kernels that synchronize on the
  // device]); fits the entry's last padding byte.
  bool cooperative = false;

  friend bool operator==(const access_entry&, const access_entry&) = default;
};

// Histories hold millions of these: keep it one cache line.
static_assert(sizeof(access_entry) <= 64);

}  // namespace streamsan
