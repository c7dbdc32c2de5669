// IPC memory handles (Note [IPC memory handles]): the parent allocates a
// buffer and hands its cudaIpcMemHandle to a child forked before either
// process touched CUDA. The child opens the handle, fills the memory on one
// stream and copies it on another, without (racy) or after (fixed) an
// event, and closes the handle once its device is idle. streamsan checks
// each process; the race is the child's. A machine where IPC is unavailable
// makes the program exit 77 (check_verdict.sh skips it).
#include <sys/wait.h>
#include <unistd.h>

#include "example_common.h"

namespace {

constexpr int unavailable = 77;
constexpr int n = 1 << 20;

bool read_all(int fd, void* data, std::size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t got = read(fd, p, size);
    if (got <= 0) return false;
    p += got;
    size -= static_cast<std::size_t>(got);
  }
  return true;
}

bool write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t put = write(fd, p, size);
    if (put <= 0) return false;
    p += put;
    size -= static_cast<std::size_t>(put);
  }
  return true;
}

// The child: opens the parent's memory and uses it on two streams.
int child(int from_parent, int to_parent) {
  char available = 0;
  cudaIpcMemHandle_t handle{};
  if (!read_all(from_parent, &available, 1)) return 2;
  if (!available) return unavailable;
  if (!read_all(from_parent, &handle, sizeof handle)) return 2;
  float* shared = nullptr;
  const cudaError_t opened = cudaIpcOpenMemHandle(reinterpret_cast<void**>(&shared), handle,
                                                  cudaIpcMemLazyEnablePeerAccess);
  if (opened != cudaSuccess) {
    std::fprintf(stderr, "cudaIpcOpenMemHandle: %s\n", cudaGetErrorString(opened));
    return unavailable;
  }
  float* copy;
  CHECK(cudaMalloc(&copy, n * sizeof(float)));
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t filled;
  CHECK(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
  fill<<<64, 256, 0, s1>>>(shared, n, 1.0f, 1000000);
  CHECK(cudaGetLastError());
  // An exact write to race with, whatever the fill's footprint is taken to be.
  CHECK(cudaMemsetAsync(shared, 0, sizeof(float), s1));
#if STREAMSAN_FIXED
  CHECK(cudaEventRecord(filled, s1));
  CHECK(cudaStreamWaitEvent(s2, filled, 0));
#endif
  CHECK(cudaMemcpyAsync(copy, shared, n * sizeof(float), cudaMemcpyDeviceToDevice, s2));
  CHECK(cudaDeviceSynchronize());
  float last = 0;
  CHECK(cudaMemcpy(&last, copy + n - 1, sizeof(float), cudaMemcpyDeviceToHost));
  const int status = report_result("copy[n-1]", last, 1.0f);
  CHECK(cudaIpcCloseMemHandle(shared));
  CHECK(cudaEventDestroy(filled));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  CHECK(cudaFree(copy));
  const char done = 1;
  if (!write_all(to_parent, &done, 1)) return 2;
  return status;
}

// The parent: exports a buffer, waits for the child, frees the buffer.
int parent(pid_t pid, int to_child, int from_child) {
  float* buffer;
  CHECK(cudaMalloc(&buffer, n * sizeof(float)));
  CHECK(cudaMemset(buffer, 0, n * sizeof(float)));
  CHECK(cudaDeviceSynchronize());
  cudaIpcMemHandle_t handle{};
  const cudaError_t exported = cudaIpcGetMemHandle(&handle, buffer);
  const char available = exported == cudaSuccess;
  if (!available) std::fprintf(stderr, "cudaIpcGetMemHandle: %s\n", cudaGetErrorString(exported));
  if (!write_all(to_child, &available, 1)) return 2;
  if (available && !write_all(to_child, &handle, sizeof handle)) return 2;
  char done = 0;
  read_all(from_child, &done, 1);  // the child is finished with the buffer (or gone)
  int child_status = 0;
  if (waitpid(pid, &child_status, 0) != pid || !WIFEXITED(child_status)) return 2;
  CHECK(cudaFree(buffer));
  return WEXITSTATUS(child_status);
}

}  // namespace

int main() {
  int down[2], up[2];  // parent -> child, child -> parent
  if (pipe(down) != 0 || pipe(up) != 0) return 2;
  std::fflush(nullptr);
  const pid_t pid = fork();  // before any CUDA call: each process initializes its own
  if (pid < 0) return 2;
  if (pid == 0) {
    close(down[1]);
    close(up[0]);
    // exit(), not _exit(): streamsan reports from an atexit handler.
    std::exit(child(down[0], up[1]));
  }
  close(down[0]);
  close(up[1]);
  return parent(pid, down[1], up[0]);
}
