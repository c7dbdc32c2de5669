// main() of the GPU test programs: exit 77 (Meson's "skipped") when no CUDA
// device is visible, so that `meson test --suite gpu` reports SKIP on a
// machine without a GPU or driver instead of failing.
#include <gtest/gtest.h>

#include <cstdio>

#include "runtime/backend/backend.h"

int main(int argc, char** argv) {
  if (!streamsan::rt::cuda_device_present()) {
    std::puts("no CUDA device visible: skipping (exit 77)");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
