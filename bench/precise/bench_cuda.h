// What the GPU programs of bench/precise share: a check that names the
// failed call's place and error, the loop of the two programs that hand
// work between two streams, and the triad kernel of the bandwidth-bound
// ones.
#pragma once

#include <cuda_runtime.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(call)                                                              \
  do {                                                                           \
    cudaError_t e_ = (call);                                                     \
    if (e_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

// Note [The program thread's own counts]
// The loop's wall time moves by 20% between processes on the GPU machine,
// more than most changes of ours. The user-mode instructions and cycles of
// the program's thread (perf_event_open on the calling thread, the
// kernel's part left out) move far less, and they are the thread whose
// time a launch-bound loop is: a change that saves work on it shows there
// in one round. Where the kernel or a container refuses perf events,
// `available()` is false and the loop says so instead. The H200 machine is
// one of those: a virtual machine with no hardware PMU (no `cpu` under
// /sys/bus/event_source/devices, so ENOENT), so this is for machines that
// have one.
class thread_counters {
 public:
  thread_counters() : instructions_(open_counter(PERF_COUNT_HW_INSTRUCTIONS)),
                      cycles_(open_counter(PERF_COUNT_HW_CPU_CYCLES)) {}
  ~thread_counters() {
    if (instructions_ >= 0) ::close(instructions_);
    if (cycles_ >= 0) ::close(cycles_);
  }
  thread_counters(const thread_counters&) = delete;
  thread_counters& operator=(const thread_counters&) = delete;

  bool available() const { return instructions_ >= 0 && cycles_ >= 0; }
  const char* why_not() const { return std::strerror(error_); }
  void start() { instructions_at_ = read(instructions_); cycles_at_ = read(cycles_); }
  void stop() {
    instructions_spent_ = read(instructions_) - instructions_at_;
    cycles_spent_ = read(cycles_) - cycles_at_;
  }
  std::uint64_t instructions() const { return instructions_spent_; }
  std::uint64_t cycles() const { return cycles_spent_; }

 private:
  int open_counter(std::uint64_t config) {
    perf_event_attr a{};
    a.size = sizeof a;
    a.type = PERF_TYPE_HARDWARE;
    a.config = config;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    const long fd = ::syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd < 0) error_ = errno;
    return static_cast<int>(fd);
  }
  static std::uint64_t read(int fd) {
    std::uint64_t v = 0;
    if (fd >= 0 && ::read(fd, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) v = 0;
    return v;
  }
  int error_ = 0;  // first: open_counter() sets it while the two below are made
  int instructions_;
  int cycles_;
  std::uint64_t instructions_at_ = 0, cycles_at_ = 0;
  std::uint64_t instructions_spent_ = 0, cycles_spent_ = 0;
};

// The program thread's counts per launch as `name=value` fields for the
// loop's line (Note [The program thread's own counts]).
inline void print_thread_counts(const thread_counters& c, int launches) {
  if (!c.available()) {
    std::printf(" thread_counters=unavailable(%s)", c.why_not());
    return;
  }
  std::printf(" thread_instructions_per_launch=%.0f thread_cycles_per_launch=%.0f",
              static_cast<double>(c.instructions()) / launches,
              static_cast<double>(c.cycles()) / launches);
}

// The loop of launch_loop and busy_streams: two non-blocking streams, `batch`
// launches on one, then an event record and a wait hand over to the other
// (so every batch is ordered after the one before), `total` launches, one
// synchronize at the end. `launch(i, stream, k)` issues launch i on stream
// k of the two; `after(i)` runs once it is issued. Returns the milliseconds
// from the first launch to the end of the synchronize; `counts`, when
// given, counts the calling thread over the same region.
template <class Launch, class After>
double handoff_loop_ms(int total, int batch, Launch launch, After after,
                       thread_counters* counts = nullptr) {
  cudaStream_t s[2];
  cudaEvent_t handoff[2];
  for (int k = 0; k < 2; ++k) {
    CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&handoff[k], cudaEventDisableTiming));
  }
  CHECK(cudaDeviceSynchronize());
  if (counts != nullptr) counts->start();
  const auto start = std::chrono::steady_clock::now();
  int current = 0;
  for (int i = 0; i < total; ++i) {
    launch(i, s[current], current);
    if ((i + 1) % batch == 0) {
      CHECK(cudaEventRecord(handoff[current], s[current]));
      CHECK(cudaStreamWaitEvent(s[1 - current], handoff[current], 0));
      current = 1 - current;
    }
    after(i);
  }
  CHECK(cudaDeviceSynchronize());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (counts != nullptr) counts->stop();
  return ms;
}

// STREAM's triad, c = a + s * b, in a grid-stride loop.
static __global__ void triad(float* c, const float* a, const float* b, float s, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    c[i] = a[i] + s * b[i];
  }
}
