// gpu_or_skip PROGRAM [ARGS...]: runs PROGRAM (replacing this process) when a
// CUDA device is visible, exits 77 (Meson's "skipped") otherwise. Lets the
// backend-agnostic runtime tests run as `gpu` tests with STREAMSAN_BACKEND=cuda.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/backend/backend.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gpu_or_skip PROGRAM [ARGS...]\n");
    return 2;
  }
  if (!streamsan::rt::cuda_device_present()) {
    std::printf("no CUDA device visible: skipping %s (exit 77)\n", argv[1]);
    return 77;
  }
  execv(argv[1], argv + 1);
  std::fprintf(stderr, "gpu_or_skip: cannot run %s: %s\n", argv[1], std::strerror(errno));
  return 2;
}
