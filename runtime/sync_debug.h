// Sync debug mode (S-SYNC-3): report operations that make the host wait for
// the device, so that accidental synchronizations can be found.
//
// Synchronizing operations: stream / event / device synchronize, a
// synchronous memcpy that waits (device -> host, pinned host -> device,
// host -> host, and pageable host -> device which waits for prior work),
// a synchronous memset of pinned host memory, freeing device or managed
// memory (cudaFree), and empty_cache. Queries never block and are not
// reported.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

namespace streamsan::rt {

enum class sync_debug_mode : std::uint8_t {
  off,    // torch's "default"
  warn,   // report through the warning handler, then synchronize
  error,  // throw sync_debug_error instead of synchronizing
};

std::string_view to_string(sync_debug_mode mode) noexcept;

void set_sync_debug_mode(sync_debug_mode mode);
sync_debug_mode get_sync_debug_mode();

// Receives each warning ("streamsan: warning: synchronizing operation:
// stream#2.synchronize()"). The default prints to stderr. An empty function
// restores the default.
using warning_handler = std::function<void(std::string_view message)>;
void set_warning_handler(warning_handler handler);

}  // namespace streamsan::rt
