// The launch-bound loop of the capture-overhead issue: 2 non-blocking
// streams, 8 buffers of 1 KiB, a kernel p[i] += q[i] writing buf[i % 8] and
// reading buf[(i + 1) % 8]; 16 launches on one stream, then an event record
// and a wait hand over to the other. Correct (every batch is ordered after
// the one before). Prints the time of the loop, and with LAUNCH_LOOP_RSS_EVERY=N
// the process's resident memory after every N launches (the library's
// memory over a long run; launch-overhead-gpu.sh). With
// LAUNCH_LOOP_ALTERNATE=P under `streamsan run` and STREAMSAN_BENCH_PAUSE=1,
// it also times the loop in 2P blocks, streamsan's modelling of launches on
// in one block of each pair and paused in the other (Note [Launches paused
// for a benchmark] in inject/sanitizer_api/sanitizer_source.cpp): the
// price of our launch path measured inside one process. With
// LAUNCH_LOOP_ALTERNATE_WHAT=runtime_callbacks the blocks switch the plain
// runtime launch callbacks on and off instead (Note [Runtime launch
// callbacks toggled for a benchmark]).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

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

using control_fn = int (*)(int);

// One of the injection library's benchmark controls, when it is the library
// loaded.
control_fn find_control(const char* name) {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (path == nullptr || *path == '\0') return nullptr;
  void* lib = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
  if (lib == nullptr) return nullptr;
  auto* control = reinterpret_cast<control_fn>(dlsym(lib, name));
  dlclose(lib);  // the driver keeps it loaded
  return control;
}

// Blocks of launches alternately modelled and paused, in pairs whose order
// turns each pair (on-off, off-on, ...), each block's time on the host.
class alternation {
 public:
  // `what` (checked by main): "pause" (on: launches modelled, off: paused),
  // "runtime_callbacks" (on: the plain runtime launch callbacks on) or
  // "launch_callbacks" (on: launches modelled, off: no launch callback at
  // all, the launches unseen: Note [Launches unseen for a benchmark]).
  alternation(int pairs, int total, int batch, const std::string& what)
      : pairs_(pairs), what_(what) {
    if (pairs_ <= 0) return;
    // One block more, first: a warm-up, in the "on" state and not timed.
    block_ = total / (2 * pairs_ + 1) / batch * batch;
    const bool pause = what_ == "pause";
    const char* name = "streamsan_inject_bench_launch_callbacks";
    if (pause) name = "streamsan_inject_bench_pause_launches";
    if (what_ == "runtime_callbacks") name = "streamsan_inject_bench_runtime_launch_callbacks";
    control_ = find_control(name);
    on_argument_ = pause ? 0 : 1;
    if (block_ == 0 || control_ == nullptr || control_(on_argument_) != 1) {
      std::printf("alternate refused: %s\n",
                  block_ == 0 ? "too few launches for the pairs"
                              : "no streamsan control (STREAMSAN_BENCH_PAUSE=1 under streamsan run?)");
      pairs_ = 0;
    }
  }
  bool on() const { return pairs_ > 0; }
  // After launch i: at the end of the warm-up and of each timed block.
  void after(int i) {
    if (!on() || (i + 1) % block_ != 0 || k_ > 2 * pairs_) return;
    if (k_ > 0) {
      const auto now = std::chrono::steady_clock::now();
      const double ms = std::chrono::duration<double, std::milli>(now - start_).count();
      (modelled(k_ - 1) ? on_ms_ : off_ms_).push_back(ms);
    }
    if (k_ < 2 * pairs_) {
      set(k_);
    } else {
      control_(on_argument_);
    }
    ++k_;
    start_ = std::chrono::steady_clock::now();
  }
  void print() const {
    if (!on()) return;
    std::vector<double> ratios;
    for (std::size_t p = 0; p < on_ms_.size() && p < off_ms_.size(); ++p) {
      ratios.push_back(on_ms_[p] / off_ms_[p]);
    }
    std::printf("alternate what=%s pairs=%d block=%d on_ms=", what_.c_str(), pairs_, block_);
    for (double v : on_ms_) std::printf("%.3f,", v);
    std::printf(" off_ms=");
    for (double v : off_ms_) std::printf("%.3f,", v);
    std::printf(" ratios=");
    for (double v : ratios) std::printf("%.4f,", v);
    std::sort(ratios.begin(), ratios.end());
    const double median = ratios.empty() ? 0.0 : ratios[ratios.size() / 2];
    std::printf(" median_ratio=%.4f\n", median);
  }

 private:
  // Timed block k (0-based, after the warm-up) of pair k / 2: the modelled
  // one first in even pairs.
  static bool modelled(int k) { return (k % 2 == 0) == ((k / 2) % 2 == 0); }
  void set(int k) { control_(modelled(k) ? on_argument_ : 1 - on_argument_); }

  int pairs_;
  std::string what_;
  int block_ = 0;
  int k_ = 0;
  control_fn control_ = nullptr;
  int on_argument_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::vector<double> on_ms_, off_ms_;
};

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
  const char* alternate_text = std::getenv("LAUNCH_LOOP_ALTERNATE");
  int pairs = 0;
  if (alternate_text != nullptr) {
    char* end = nullptr;
    const long n = std::strtol(alternate_text, &end, 10);
    if (end == alternate_text || *end != '\0' || n <= 0 || n > 1000) {
      std::fprintf(stderr, "launch_loop: LAUNCH_LOOP_ALTERNATE=%s: expected pairs, 1 to 1000\n",
                   alternate_text);
      return 2;
    }
    pairs = static_cast<int>(n);
  }
  const char* what_text = std::getenv("LAUNCH_LOOP_ALTERNATE_WHAT");
  const std::string what = what_text != nullptr ? what_text : "pause";
  if (what != "pause" && what != "runtime_callbacks" && what != "launch_callbacks") {
    std::fprintf(stderr,
                 "launch_loop: LAUNCH_LOOP_ALTERNATE_WHAT=%s: expected pause, runtime_callbacks "
                 "or launch_callbacks\n",
                 what.c_str());
    return 2;
  }
  alternation alternate(pairs, total, batch, what);
  thread_counters counts;
  const double ms = handoff_loop_ms(
      total, batch,
      [&](int i, cudaStream_t stream, int) {
        add<<<1, floats, 0, stream>>>(buf[i % buffers], buf[(i + 1) % buffers]);
      },
      [&](int i) {
        if (rss_every > 0 && (i + 1) % rss_every == 0) print_rss(i + 1);
        alternate.after(i);
      },
      &counts);
  std::printf("launch_loop launches=%d elapsed_ms=%.3f us_per_launch=%.3f", total, ms,
              ms * 1000.0 / total);
  print_thread_counts(counts, total);
  std::printf("\n");
  alternate.print();
  return 0;
}
