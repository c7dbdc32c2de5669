// Full NVTX range paths ("outer/inner") as interned string ids.
//
// Note [NVTX paths]
// S-NVTX-1: ranges nest per host thread. A report is most useful with the
// whole path ("train/forward/attention"), not just the innermost message, so
// each thread keeps a stack of path ids, and a push interns "parent/message"
// once per distinct (parent, message) pair. The paths are defined in the
// engine's own log_tables with ids from first_engine_string_id
// (0x80000000) up, so they never clash with the producer's string ids and a
// report printer resolves them like any other string. The number of paths is
// bounded by the program's distinct range nestings, not by the log length.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "sanitizer/log/ids.h"
#include "sanitizer/log/log_tables.h"

namespace streamsan {

class nvtx_paths {
 public:
  explicit nvtx_paths(std::uint32_t first_id) : next_id_(first_id) {}

  // The path of `message` pushed inside `parent` (none at top level),
  // defined in `tables` the first time it is seen.
  string_id child(string_id parent, string_id message, log_tables& tables);

  std::size_t size() const noexcept { return paths_.size(); }

 private:
  std::uint32_t next_id_;
  std::unordered_map<std::uint64_t, string_id> paths_;  // (parent, message) -> path
};

}  // namespace streamsan
