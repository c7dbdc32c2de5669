// Exits 0 when a CUDA device is usable, 77 (Meson's "skipped") otherwise.
// Loads the driver with dlopen so that it runs, and says so, on machines
// without one.
#include <dlfcn.h>

#include <cstdio>

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
  return 0;
}
