// Streams and threads that come and go (issue #16): memory must stay flat.
//
//   stream_churn [CYCLES] [THREADS]
//
// CYCLES (default 100000) times: create a stream, launch a kernel on it,
// synchronize it, destroy it; then THREADS (default 2000) threads one after
// the other, each launching on its per-thread default stream and
// synchronizing it. Prints the resident memory after 1k, 10k, 100k... cycles
// and after the threads, and exits 3 when the last stream step's resident
// memory is more than 10% (and 16 MiB) above the 10k step's, or the threads'
// step more than that above the end of the streams. Race-free: under
// `streamsan run` it must get no report, and memory must stay flat there
// too (the injection library's and the engine's bounds, docs/injection.md
// and docs/engine.md).
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "example_common.h"

namespace {

std::uint64_t resident_kib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      std::uint64_t kib = 0;
      status >> kib;
      return kib;
    }
    status.ignore(1 << 12, '\n');
  }
  return 0;
}

bool flat(const char* what, std::uint64_t before, std::uint64_t after) {
  const bool ok = after <= before + before / 10 + 16 * 1024;
  std::printf("%s: resident %llu KiB -> %llu KiB: %s\n", what,
              static_cast<unsigned long long>(before), static_cast<unsigned long long>(after),
              ok ? "flat" : "GROWS");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const long cycles = argc > 1 ? std::atol(argv[1]) : 100000;
  const long threads = argc > 2 ? std::atol(argv[2]) : 2000;
  float* buffer;
  CHECK(cudaMalloc(&buffer, 1024 * sizeof(float)));
  CHECK(cudaDeviceSynchronize());

  std::uint64_t at_10k = 0, at_end = 0;
  for (long i = 1; i <= cycles; ++i) {
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    fill<<<1, 256, 0, s>>>(buffer, 1024, 1.0f, 0);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
    bool step = i == cycles;
    for (long m = 1000; m <= i && !step; m *= 10) step = i == m;
    if (step) {
      at_end = resident_kib();
      if (i == 10000) at_10k = at_end;
      std::printf("streams %8ld: resident %llu KiB\n", i, static_cast<unsigned long long>(at_end));
      std::fflush(stdout);
    }
  }
  for (long i = 0; i < threads; ++i) {
    std::thread([buffer] {
      fill<<<1, 256, 0, cudaStreamPerThread>>>(buffer, 1024, 2.0f, 0);
      CHECK(cudaStreamSynchronize(cudaStreamPerThread));
    }).join();
  }
  const std::uint64_t after_threads = resident_kib();
  std::printf("threads %8ld: resident %llu KiB\n", threads,
              static_cast<unsigned long long>(after_threads));
  CHECK(cudaFree(buffer));
  bool ok = true;
  if (at_10k != 0) ok &= flat("streams 10k -> end", at_10k, at_end);
  ok &= flat("threads", at_end, after_threads);
  return ok ? 0 : 3;
}
