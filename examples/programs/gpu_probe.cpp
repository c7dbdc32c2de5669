// Exits 0 when a CUDA device is usable, 77 (Meson's "skipped") otherwise.
// Loads the driver with dlopen so that it runs, and says so, on machines
// without one. Built with STREAMSAN_PROBE_DEVICES=2 it asks for two devices
// that can access each other's memory (the two-GPU examples).
#include <dlfcn.h>

#include <cstdio>

#ifndef STREAMSAN_PROBE_DEVICES
#define STREAMSAN_PROBE_DEVICES 1
#endif

int main() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) {
    std::printf("no CUDA driver (libcuda.so.1): skipped\n");
    return 77;
  }
  using init_fn = int (*)(unsigned);
  using count_fn = int (*)(int*);
  auto* init = reinterpret_cast<init_fn>(dlsym(driver, "cuInit"));
  auto* count = reinterpret_cast<count_fn>(dlsym(driver, "cuDeviceGetCount"));
  int devices = 0;
  if (init == nullptr || count == nullptr || init(0) != 0 || count(&devices) != 0 ||
      devices == 0) {
    std::printf("no usable CUDA device: skipped\n");
    return 77;
  }
  if (devices < STREAMSAN_PROBE_DEVICES) {
    std::printf("%d CUDA device(s), %d needed: skipped\n", devices, STREAMSAN_PROBE_DEVICES);
    return 77;
  }
  if (STREAMSAN_PROBE_DEVICES >= 2) {
    using peer_fn = int (*)(int*, int, int);
    auto* can_access = reinterpret_cast<peer_fn>(dlsym(driver, "cuDeviceCanAccessPeer"));
    int yes = 0;
    if (can_access == nullptr || can_access(&yes, 1, 0) != 0 || yes == 0) {
      std::printf("devices 0 and 1 cannot access each other's memory: skipped\n");
      return 77;
    }
  }
  return 0;
}
