// The canonical stream race (S-STREAM-2), written against the streamsan
// runtime: the current stream fills A, a side stream sums it. Nothing orders
// the sum after the fill, so the sum may read A before it is filled.
//
//   STREAMSAN=1 side_stream_sum           # reports the race
//   STREAMSAN=1 side_stream_sum --fixed   # wait_stream orders them: clean
//
// Runs on the simulated device or a GPU (STREAMSAN_BACKEND=sim|cuda|auto).
// On the sim, STREAMSAN_SIM_SEED picks the schedule; some seeds really run
// the sum first and print a wrong result.
#include <cstdint>
#include <cstring>
#include <exception>
#include <iostream>

#include "runtime/api.h"

namespace rt = streamsan::rt;

int run(bool fixed) {
  constexpr std::uint64_t count = 1 << 16;

  auto a = rt::allocate_device(count * sizeof(float), -1, "A");
  auto sum = rt::allocate_device(sizeof(float), -1, "sum");
  auto result = rt::allocate_pinned_host(sizeof(float), "result");
  rt::stream side;

  rt::launch(rt::current_stream(), rt::kernels::fill{a, 1.0f});
  if (fixed) side.wait_stream(rt::current_stream());
  rt::launch(side, rt::kernels::reduce_sum{a, sum});
  side.synchronize();

  rt::memcpy(result, sum);  // device -> host: returns when complete (S-COPY-1)
  const float value = rt::host_read_at<float>(result, 0);
  std::cout << "sum = " << value << " (expected " << count << ")\n";
  return 0;
}

int main(int argc, char** argv) {
  const bool fixed = argc > 1 && std::strcmp(argv[1], "--fixed") == 0;
  try {
    return run(fixed);
  } catch (const std::exception& e) {
    // Runtime errors name the call and the objects; a bad STREAMSAN_*
    // variable names the variable.
    std::cerr << "side_stream_sum: " << e.what() << '\n';
    return 1;
  }
}
