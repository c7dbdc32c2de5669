// A side stream sums a buffer the current stream is still filling: the sum
// is not ordered after the fill (S-STREAM-2). The golden report is
// tests/report/golden/runtime/side_stream.txt.
#include "runtime/api.h"

namespace rt = streamsan::rt;

int main() {
  auto a = rt::allocate_device(1 << 16, -1, "A");
  auto sum = rt::allocate_device(sizeof(float), -1, "sum");
  rt::stream side;
  rt::launch(rt::current_stream(), rt::kernels::fill{a, 1.0f});
  rt::launch(side, rt::kernels::reduce_sum{a, sum});  // forgot side.wait_stream(current)
  side.synchronize();
  return 0;
}
