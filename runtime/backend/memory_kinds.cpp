#include "runtime/backend/memory_kinds.h"

namespace streamsan::rt {

bool is_device_memory(memory_kind kind) noexcept {
  switch (kind) {
    case memory_kind::device:
    case memory_kind::managed:
    case memory_kind::stream_ordered:
    case memory_kind::cached_block:
      return true;
    case memory_kind::pinned_host:
    case memory_kind::pageable_host:
      return false;
  }
  return false;
}

}  // namespace streamsan::rt
