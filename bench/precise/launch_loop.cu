// The launch-bound loop of the capture-overhead issue: 2 non-blocking
// streams, 8 buffers of 1 KiB, a kernel p[i] += q[i] writing buf[i % 8] and
// reading buf[(i + 1) % 8]; 16 launches on one stream, then an event record
// and a wait hand over to the other. Correct (every batch is ordered after
// the one before). Prints the time of the loop, and with LAUNCH_LOOP_RSS_EVERY=N
// the process's resident memory after every N launches (the library's
// memory over a long run; launch-overhead-gpu.sh).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench/precise/bench_cuda.h"

__global__ void add(float* p, const float* q) { p[threadIdx.x] += q[threadIdx.x]; }

// "rss launches=N vmrss_kib=R vmhwm_kib=H" from /proc/self/status.
void print_rss(int launches) {
  long rss = -1, hwm = -1;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      if (std::strncmp(line, "VmRSS:", 6) == 0) rss = std::atol(line + 6);
      if (std::strncmp(line, "VmHWM:", 6) == 0) hwm = std::atol(line + 6);
    }
    std::fclose(f);
  }
  std::printf("rss launches=%d vmrss_kib=%ld vmhwm_kib=%ld\n", launches, rss, hwm);
  std::fflush(stdout);
}

int main(int argc, char** argv) {
  const int total = argc > 1 ? std::atoi(argv[1]) : 200000;
  const char* every_text = std::getenv("LAUNCH_LOOP_RSS_EVERY");
  const int rss_every = every_text ? std::atoi(every_text) : 0;
  constexpr int buffers = 8, floats = 256, batch = 16;
  float* buf[buffers];
  for (auto& b : buf) {
    CHECK(cudaMalloc(&b, floats * sizeof(float)));
    CHECK(cudaMemset(b, 0, floats * sizeof(float)));
  }
  cudaStream_t s[2];
  cudaEvent_t handoff[2];
  for (int k = 0; k < 2; ++k) {
    CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&handoff[k], cudaEventDisableTiming));
  }
  CHECK(cudaDeviceSynchronize());
  const auto start = std::chrono::steady_clock::now();
  int current = 0;
  for (int i = 0; i < total; ++i) {
    add<<<1, floats, 0, s[current]>>>(buf[i % buffers], buf[(i + 1) % buffers]);
    if ((i + 1) % batch == 0) {
      CHECK(cudaEventRecord(handoff[current], s[current]));
      CHECK(cudaStreamWaitEvent(s[1 - current], handoff[current], 0));
      current = 1 - current;
    }
    if (rss_every > 0 && (i + 1) % rss_every == 0) print_rss(i + 1);
  }
  CHECK(cudaDeviceSynchronize());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("launch_loop launches=%d elapsed_ms=%.3f us_per_launch=%.3f\n", total, ms,
              ms * 1000.0 / total);
  return 0;
}
