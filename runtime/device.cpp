#include "runtime/device.h"

#include <string>

#include "runtime/session/session.h"

namespace streamsan::rt {

int device_count() { return enter().device_count; }

int current_device() { return enter().thread().device; }

void set_device(int device) {
  auto& s = enter();
  s.thread().device = s.resolve_device(device, [&] {
    return "set_device(" + std::to_string(device) + ")";
  });
}

device_properties get_device_properties(int device) {
  auto& s = enter();
  const int d = s.resolve_device(device, [] { return std::string("get_device_properties"); });
  return s.device->properties(d);
}

std::string get_device_name(int device) { return get_device_properties(device).name; }

std::pair<int, int> get_device_capability(int device) {
  const auto p = get_device_properties(device);
  return {p.major, p.minor};
}

memory_info mem_get_info(int device) {
  auto& s = enter();
  const int d = s.resolve_device(device, [] { return std::string("mem_get_info"); });
  return s.device->mem_get_info(d);
}

bool can_device_access_peer(int device, int peer) {
  auto& s = enter();
  const auto what = [&] {
    return "can_device_access_peer(" + std::to_string(device) + ", " + std::to_string(peer) + ")";
  };
  const int d = s.resolve_device(device, what);
  const int p = s.resolve_device(peer, what);
  return s.device->can_access_peer(d, p);
}

void synchronize(int device) {
  auto& s = enter();
  const auto what = [&] { return "synchronize(device " + std::to_string(device) + ")"; };
  std::unique_lock lock(s.mutex);
  const int d = s.resolve_device(device, what);
  s.forbid_device_sync_during_capture(d, what);
  s.check_sync(what);
  lock.unlock();  // Note [One mutex orders the runtime]: waiting only
  s.device->synchronize_device(d);
  lock.lock();
  if (s.logging()) s.emit(device_synchronize{d});
}

}  // namespace streamsan::rt
