// A block from the caching allocator is used on a second stream and freed
// without record_stream: the allocator hands the same bytes out again while
// the second stream may still read them (S-MEM-1). The golden report is
// tests/report/golden/runtime/record_stream.txt.
#include "runtime/api.h"

namespace rt = streamsan::rt;

int main() {
  rt::stream producer;
  rt::stream consumer;
  auto sum = rt::allocate_device(sizeof(float), -1, "sum");
  {
    auto block = rt::caching_allocate(4096, producer);
    rt::launch(producer, rt::kernels::fill{block.view(), 1.0f});
    consumer.wait_stream(producer);
    rt::launch(consumer, rt::kernels::reduce_sum{block.view(), sum});
    // forgot: block.record_stream(consumer);
  }
  auto reused = rt::caching_allocate(4096, producer);
  rt::launch(producer, rt::kernels::fill{reused.view(), 0.0f});
  producer.synchronize();
  consumer.synchronize();
  return 0;
}
