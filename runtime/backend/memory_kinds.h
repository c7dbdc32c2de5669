// Which memory kinds live on a device. Both backends and the runtime apply
// CUDA's rules (S-COPY-*, S-MEM-6) through this one table.
#pragma once

#include "sanitizer/log/record.h"

namespace streamsan::rt {

// device, managed, stream_ordered and cached_block memory live on a device;
// pinned and pageable host memory do not.
bool is_device_memory(memory_kind kind) noexcept;

}  // namespace streamsan::rt
