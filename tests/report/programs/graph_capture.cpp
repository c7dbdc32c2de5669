// A capture forks onto a second stream, which reads what the first stream
// writes in the same capture without waiting for it: the two nodes have no
// dependency path (S-GRAPH-2). The golden report is
// tests/report/golden/runtime/graph_capture.txt.
#include "runtime/api.h"

namespace rt = streamsan::rt;

int main() {
  auto a = rt::allocate_device(4096, -1, "A");
  auto sum = rt::allocate_device(sizeof(float), -1, "sum");
  rt::stream main_stream;
  rt::stream helper;
  rt::graph g;
  g.capture_begin(main_stream);
  helper.wait_stream(main_stream);  // fork
  rt::launch(main_stream, rt::kernels::fill{a, 1.0f});
  rt::launch(helper, rt::kernels::reduce_sum{a, sum});  // needs the fill
  main_stream.wait_stream(helper);  // join
  g.capture_end();
  g.launch(main_stream);
  main_stream.synchronize();
  return 0;
}
