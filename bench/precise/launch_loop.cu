// The launch-bound loop of the capture-overhead issue: 2 non-blocking
// streams, 8 buffers of 1 KiB, a kernel p[i] += q[i] writing buf[i % 8] and
// reading buf[(i + 1) % 8]; 16 launches on one stream, then an event record
// and a wait hand over to the other. Correct (every batch is ordered after
// the one before). Prints the time of the loop, and with LAUNCH_LOOP_RSS_EVERY=N
// the process's resident memory after every N launches (the library's
// memory over a long run; launch-overhead-gpu.sh).
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
  thread_counters counts;
  const double ms = handoff_loop_ms(
      total, batch,
      [&](int i, cudaStream_t stream, int) {
        add<<<1, floats, 0, stream>>>(buf[i % buffers], buf[(i + 1) % buffers]);
      },
      [&](int i) {
        if (rss_every > 0 && (i + 1) % rss_every == 0) print_rss(i + 1);
      },
      &counts);
  std::printf("launch_loop launches=%d elapsed_ms=%.3f us_per_launch=%.3f", total, ms,
              ms * 1000.0 / total);
  print_thread_counts(counts, total);
  std::printf("\n");
  return 0;
}
