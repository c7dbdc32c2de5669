#include "runtime/host_access.h"

#include <mutex>
#include <string>

#include "runtime/errors.h"
#include "runtime/session/buffer_access.h"
#include "sanitizer/engine/diagnostic.h"  // to_string(memory_kind)
#include "runtime/session/session.h"

namespace streamsan::rt {

void note_host_access(const buffer_view& view, access_mode mode, std::string_view what) {
  if (is_device_memory(view.kind()) && view.kind() != memory_kind::managed) {
    throw usage_error(std::string(what) + " of " + to_string(view.alloc()) + ": " +
                      std::string(to_string(view.kind())) +
                      " memory is not host-accessible; copy it with memcpy");
  }
  auto& s = enter();
  if (!s.logging()) return;
  std::lock_guard lock(s.mutex);
  const access a{view.range(), mode};
  s.emit(host_access{std::span<const access>(&a, 1), s.intern(what)});
}

}  // namespace streamsan::rt
