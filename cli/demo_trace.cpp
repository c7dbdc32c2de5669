// streamsan-demo-trace OUT: records, with the real recorder and trace
// writer, what the runtime would log for this small program, and writes it
// to OUT:
//
//   make_buffer:  A = cudaMalloc(4096)
//   buggy_step:   fill<<<..., s1>>>(A); sum<<<..., s2>>>(A);   // no ordering: a race
//   fixed_step:   fill<<<..., s1>>>(A); cudaEventRecord(e, s1);
//                 cudaStreamWaitEvent(s2, e); sum<<<..., s2>>>(A);   // ordered
//
// The main job analyzes OUT to show a complete race report. It stands in
// for a real CUDA program until the runtime can record one on a GPU.
#include <cstdlib>
#include <exception>
#include <iostream>

#include "sanitizer/log/recorder.h"
#include "sanitizer/log/trace_writer.h"

using namespace streamsan;

// Global names keep the demo's stacks short ("launch_sum(demo&)").
struct demo {
  recorder& rec;
  stream_id s1{}, s2{};
  alloc_id a{};
  event_id e{};
};

[[gnu::noipa]] void make_streams(demo& d) {
  d.s1 = d.rec.new_stream_id();
  d.s2 = d.rec.new_stream_id();
  d.rec.emit(stream_create{d.s1, 0, stream_flavor::non_blocking, 0});
  d.rec.emit(stream_create{d.s2, 0, stream_flavor::non_blocking, 0});
  d.e = d.rec.new_event_id();
  d.rec.emit(event_create{d.e, event_flag_none});
}

[[gnu::noipa]] void make_buffer(demo& d) {
  d.a = d.rec.new_alloc_id();
  d.rec.emit(alloc_record{d.a, memory_kind::device, 0, 4096, 0x7f3a00000000, {}, {}, 0,
                          d.rec.intern("A")});
}

[[gnu::noipa]] void launch_fill(demo& d) {
  const streamsan::access writes_a[] = {{{d.a, 0, 4096}, access_mode::write}};
  d.rec.emit(kernel_launch{d.s1, d.rec.intern("fill"), writes_a});
}

[[gnu::noipa]] void launch_sum(demo& d) {
  const streamsan::access reads_a[] = {{{d.a, 0, 4096}, access_mode::read}};
  d.rec.emit(kernel_launch{d.s2, d.rec.intern("sum"), reads_a});
}

[[gnu::noipa]] void buggy_step(demo& d) {
  launch_fill(d);
  launch_sum(d);  // races with fill: s2 is not ordered after s1
}

[[gnu::noipa]] void fixed_step(demo& d) {
  launch_fill(d);
  d.rec.emit(event_record{d.e, d.s1});
  d.rec.emit(event_wait{d.e, d.s2});
  launch_sum(d);
  d.rec.emit(device_synchronize{0});
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: streamsan-demo-trace OUT\n";
    return 2;
  }
  try {
    recorder rec({.capture_stacks = true, .stack_depth = 8});
    trace_writer writer(argv[1]);
    rec.add_sink(writer);
    rec.name_current_thread("main");
    demo d{rec};
    make_streams(d);
    make_buffer(d);
    buggy_step(d);
    rec.emit(device_synchronize{0});
    fixed_step(d);
    rec.emit(free_record{d.a, free_mode::synchronizing, {}});
    rec.remove_sink(writer);
    writer.close();
    std::cout << "streamsan-demo-trace: wrote " << writer.records_written() << " records to "
              << argv[1] << '\n';
  } catch (const std::exception& e) {
    std::cerr << "streamsan-demo-trace: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
