// The host reads a pinned buffer a copy on `copier` is still writing; it
// synchronized another stream. The golden report is
// tests/report/golden/runtime/host_read.txt.
#include "runtime/api.h"

namespace rt = streamsan::rt;

int main() {
  auto device = rt::allocate_device(1024, -1, "device");
  auto pinned = rt::allocate_pinned_host(1024, "pinned");
  rt::stream copier;
  rt::stream other;
  rt::launch(copier, rt::kernels::fill{device, 2.0f});
  rt::memcpy_async(pinned, device, copier);
  other.synchronize();  // meant: copier.synchronize()
  const auto values = rt::host_read<float>(pinned);
  return values.empty() ? 1 : 0;
}
