#include "runtime/sync_debug.h"

#include "runtime/session/session.h"

namespace streamsan::rt {

std::string_view to_string(sync_debug_mode mode) noexcept {
  switch (mode) {
    case sync_debug_mode::off: return "off";
    case sync_debug_mode::warn: return "warn";
    case sync_debug_mode::error: return "error";
  }
  return "off";
}

void set_sync_debug_mode(sync_debug_mode mode) { enter().sync_debug.store(mode); }

sync_debug_mode get_sync_debug_mode() { return enter().sync_debug.load(); }

}  // namespace streamsan::rt
