// Crash safety (issue #12, item 3; Note [Reports when the program dies]):
// a read-after-write race between two streams, then the program dies:
//   crash_after_race segfault|abort|throw|exit
// check_crash_safety.sh runs each under `streamsan run` and checks that the
// race is still reported and that the exit status is the program's death.
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "example_common.h"

int main(int argc, char** argv) {
  const char* how = argc > 1 ? argv[1] : "segfault";
  const int n = 1 << 16;
  float *a, *sum;
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&sum, sizeof(float)));
  CHECK(cudaDeviceSynchronize());
  fill<<<64, 256, 0, s1>>>(a, n, 1.0f, 1000000);
  sum_into<<<1, 256, 0, s2>>>(a, n, sum, 0);  // no event: the race
  CHECK(cudaDeviceSynchronize());
  std::fflush(stdout);
  if (std::strcmp(how, "segfault") == 0) {
    volatile int* nowhere = nullptr;
    *nowhere = 1;
  } else if (std::strcmp(how, "abort") == 0) {
    std::abort();
  } else if (std::strcmp(how, "throw") == 0) {
    std::thread([] { throw std::runtime_error("unhandled in a thread"); }).join();
  }
  return 0;  // "exit": an ordinary end, for comparison
}
