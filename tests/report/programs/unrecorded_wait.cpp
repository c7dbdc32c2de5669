// A stream waits on an event nobody recorded: the wait orders nothing
// (S-EVENT-3), so the read that follows races with the write it meant to
// wait for. The golden report is tests/report/golden/runtime/unrecorded_wait.txt.
#include "runtime/api.h"

namespace rt = streamsan::rt;

int main() {
  auto a = rt::allocate_device(4096, -1, "A");
  auto sum = rt::allocate_device(sizeof(float), -1, "sum");
  rt::stream writer;
  rt::stream reader;
  rt::event written;
  rt::launch(writer, rt::kernels::fill{a, 1.0f});
  // forgot: written.record(writer);
  reader.wait_event(written);
  rt::launch(reader, rt::kernels::reduce_sum{a, sum});
  reader.synchronize();
  writer.synchronize();
  return 0;
}
