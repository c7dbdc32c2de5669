#include "tests/report/report_fixture.h"

#include <array>

namespace streamsan::testing {
namespace {

enum : std::uint32_t {
  s_fill = 1, s_sum, s_a, s_range, s_b, s_host_write, s_node_a, s_node_b, s_pool
};
enum : std::uint32_t {
  k_fill_stack = 1, k_sum_stack, k_alloc_stack, k_host_stack, k_free_stack, k_sync_stack
};

operation_ref kernel(std::uint32_t name, std::uint32_t stream, access_mode mode,
                     std::uint32_t stack, std::uint64_t seq) {
  operation_ref op;
  op.seq = seq;
  op.op = operation_kind::kernel;
  op.context = context_kind::stream;
  op.stream = stream_id{stream};
  op.thread = thread_id{1};
  op.name = string_id{name};
  op.mode = mode;
  op.offset = 0;
  op.size = 4096;
  op.stack = stack_id{stack};
  return op;
}

operation_ref host_op(operation_kind kind, std::uint32_t stack, std::uint64_t seq) {
  operation_ref op;
  op.seq = seq;
  op.op = kind;
  op.context = context_kind::host_thread;
  op.thread = thread_id{1};
  op.stack = stack_id{stack};
  return op;
}

operation_ref stream_op(operation_kind kind, std::uint32_t stream, std::uint32_t stack,
                        std::uint64_t seq) {
  operation_ref op = host_op(kind, stack, seq);
  op.context = context_kind::stream;
  op.stream = stream_id{stream};
  return op;
}

allocation_ref buffer_a() {
  allocation_ref a;
  a.id = alloc_id{3};
  a.kind = memory_kind::device;
  a.device = 0;
  a.size = 4096;
  a.address = 0x7f0000000000;
  a.label = string_id{s_a};
  a.site = stack_id{k_alloc_stack};
  a.alloc_seq = 5;
  return a;
}

diagnostic race(diagnostic_kind kind, hazard h) {
  diagnostic d;
  d.kind = kind;
  d.hazard_kind = h;
  d.allocation = buffer_a();
  d.overlap_offset = 0;
  d.overlap_size = 4096;
  return d;
}

}  // namespace

log_tables report_tables() {
  log_tables t;
  const std::array<std::string_view, 9> strings = {
      "fill", "sum", "A", "forward/attention", "B", "host write", "node_a", "node_b", "pool"};
  for (std::uint32_t i = 0; i < strings.size(); ++i) t.define_string(string_id{i + 1}, strings[i]);
  const std::array<std::uint64_t, 2> fill = {0x1000, 0x2000};
  const std::array<std::uint64_t, 2> sum = {0x1100, 0x2000};
  const std::array<std::uint64_t, 1> alloc = {0x1200};
  const std::array<std::uint64_t, 3> host = {0x3000, 0x3100, 0x2000};
  const std::array<std::uint64_t, 1> free = {0x1300};
  const std::array<std::uint64_t, 2> sync = {0x1400, 0x2000};
  t.define_stack(stack_id{k_fill_stack}, fill);
  t.define_stack(stack_id{k_sum_stack}, sum);
  t.define_stack(stack_id{k_alloc_stack}, alloc);
  t.define_stack(stack_id{k_host_stack}, host);
  t.define_stack(stack_id{k_free_stack}, free);
  t.define_stack(stack_id{k_sync_stack}, sync);
  t.define_symbol(0x1000, {"launch_fill(float*)", "/src/demo/demo.cpp", 40, "/src/demo/demo", 0x1000});
  t.define_symbol(0x1100, {"launch_sum(float const*)", "/src/demo/demo.cpp", 42, "/src/demo/demo",
                           0x1100});
  t.define_symbol(0x1200, {"make_buffers()", "/src/demo/demo.cpp", 30, "/src/demo/demo", 0x1200});
  t.define_symbol(0x1300, {"free_buffers()", "/src/demo/demo.cpp", 70, "/src/demo/demo", 0x1300});
  t.define_symbol(0x1400, {"sync_all()", "/src/demo/sync.cpp", 12, "/src/demo/demo", 0x1400});
  t.define_symbol(0x2000, {"main", "/src/demo/demo.cpp", 60, "/src/demo/demo", 0x2000});
  // 0x3000: nothing known. 0x3100: a function without debug information.
  t.define_symbol(0x3100, {"libfoo_call", "", 0, "/usr/lib/libfoo.so.1", 0x3100});
  return t;
}

diagnostic stream_race_diagnostic() {
  diagnostic d = race(diagnostic_kind::stream_race, hazard::read_after_write);
  d.current = kernel(s_sum, 2, access_mode::read, k_sum_stack, 12);
  d.current.nvtx_range = string_id{s_range};
  d.previous = kernel(s_fill, 1, access_mode::write, k_fill_stack, 9);
  d.count = 3;
  return d;
}

std::vector<diagnostic> every_kind_diagnostics() {
  std::vector<diagnostic> all;
  all.push_back(stream_race_diagnostic());

  diagnostic host = race(diagnostic_kind::host_device_race, hazard::write_after_read);
  host.current = host_op(operation_kind::host_access, k_host_stack, 20);
  host.current.name = string_id{s_host_write};
  host.current.mode = access_mode::write;
  host.current.offset = 16;
  host.current.size = 8;
  host.previous = kernel(s_sum, 2, access_mode::read, k_sum_stack, 18);
  host.allocation->id = alloc_id{5};
  host.allocation->label = string_id{s_b};
  host.allocation->kind = memory_kind::pinned_host;
  host.allocation->size = 64;
  host.overlap_offset = 16;
  host.overlap_size = 8;
  all.push_back(host);

  diagnostic graph = race(diagnostic_kind::graph_node_race, hazard::write_after_write);
  graph.current = kernel(s_node_b, 1, access_mode::write, k_sum_stack, 31);
  graph.current.op = operation_kind::graph_node;
  graph.current.graph = graph_id{2};
  graph.current.graph_node = 1;
  graph.previous = graph.current;
  graph.previous->name = string_id{s_node_a};
  graph.previous->graph_node = 0;
  graph.previous->size = 1024;
  graph.overlap_size = 1024;
  all.push_back(graph);

  diagnostic freed = race(diagnostic_kind::free_while_in_use, hazard::none);
  freed.current = host_op(operation_kind::free, k_free_stack, 40);
  freed.previous = kernel(s_sum, 2, access_mode::read, k_sum_stack, 38);
  freed.overlap_size = 0;
  all.push_back(freed);

  diagnostic after_free = race(diagnostic_kind::use_after_free, hazard::none);
  after_free.current = kernel(s_sum, 2, access_mode::read, k_sum_stack, 45);
  after_free.previous = host_op(operation_kind::free, k_free_stack, 40);
  after_free.allocation->freed = true;
  after_free.allocation->free_site = stack_id{k_free_stack};
  after_free.overlap_size = 0;
  all.push_back(after_free);

  diagnostic before_alloc = race(diagnostic_kind::use_before_alloc, hazard::none);
  before_alloc.current = kernel(s_fill, 2, access_mode::write, k_fill_stack, 52);
  before_alloc.previous = stream_op(operation_kind::alloc, 1, k_alloc_stack, 50);
  before_alloc.allocation->kind = memory_kind::stream_ordered;
  before_alloc.allocation->label = string_id{s_pool};
  before_alloc.overlap_size = 0;
  all.push_back(before_alloc);

  diagnostic unrecorded;
  unrecorded.kind = diagnostic_kind::unrecorded_event;
  unrecorded.current = stream_op(operation_kind::event_wait, 2, k_sync_stack, 60);
  unrecorded.event = event_id{4};
  unrecorded.stream = stream_id{2};
  all.push_back(unrecorded);

  diagnostic dead_stream;
  dead_stream.kind = diagnostic_kind::destroyed_stream_use;
  dead_stream.current = kernel(s_fill, 7, access_mode::write, k_fill_stack, 71);
  dead_stream.previous = host_op(operation_kind::stream_destroy, k_sync_stack, 70);
  dead_stream.stream = stream_id{7};
  all.push_back(dead_stream);

  diagnostic dead_event;
  dead_event.kind = diagnostic_kind::destroyed_event_use;
  dead_event.current = stream_op(operation_kind::event_record, 1, k_sync_stack, 81);
  dead_event.previous = host_op(operation_kind::event_destroy, k_sync_stack, 80);
  dead_event.event = event_id{2};
  all.push_back(dead_event);

  diagnostic capture;
  capture.kind = diagnostic_kind::sync_during_capture;
  capture.current = host_op(operation_kind::device_synchronize, k_sync_stack, 90);
  capture.stream = stream_id{1};
  all.push_back(capture);

  diagnostic mismatch;
  mismatch.kind = diagnostic_kind::event_device_mismatch;
  mismatch.current = stream_op(operation_kind::event_record, 3, k_sync_stack, 95);
  mismatch.event = event_id{5};
  mismatch.stream = stream_id{3};
  all.push_back(mismatch);

  diagnostic bare;
  bare.kind = diagnostic_kind::stream_race;
  bare.hazard_kind = hazard::write_after_write;
  bare.current = kernel(s_fill, 2, access_mode::write, 0, 100);
  bare.previous = kernel(s_fill, 1, access_mode::write, 0, 99);
  all.push_back(bare);
  return all;
}

diagnostic measured_atomic_race() {
  diagnostic d = race(diagnostic_kind::stream_race, hazard::write_after_write);
  d.current = kernel(s_sum, 2, access_mode::atomic, k_sum_stack, 14);
  d.current.origin = access_origin::measured;
  d.current.offset = 16;
  d.current.size = 20;
  d.previous = kernel(s_fill, 1, access_mode::write, k_fill_stack, 13);
  d.previous->size = 64;
  d.overlap_offset = 16;
  d.overlap_size = 16;
  d.ranges = {{16, 4}, {28, 4}};
  d.range_count = 2;
  d.conflict_bytes = 8;
  return d;
}

diagnostic inferred_candidate() {
  diagnostic d = race(diagnostic_kind::stream_race, hazard::write_after_write);
  d.certainty = diagnostic_certainty::candidate;
  d.current = kernel(s_sum, 2, access_mode::read_write, k_sum_stack, 22);
  d.current.origin = access_origin::inferred;
  d.previous = kernel(s_fill, 1, access_mode::read_write, k_fill_stack, 21);
  d.previous->origin = access_origin::inferred;
  d.count = 3;
  return d;
}

diagnostic half_measured_candidate() {
  diagnostic d = race(diagnostic_kind::stream_race, hazard::read_after_write);
  d.certainty = diagnostic_certainty::candidate;
  d.current = kernel(s_sum, 2, access_mode::read, k_sum_stack, 32);
  d.current.origin = access_origin::measured;
  d.previous = kernel(s_fill, 1, access_mode::read_write, k_fill_stack, 31);
  d.previous->origin = access_origin::inferred;
  d.allocation->id = alloc_id{5};
  d.allocation->label = string_id{s_b};
  d.overlap_offset = 0;
  d.overlap_size = 1024;
  d.ranges = {{0, 16}, {64, 16}};
  d.range_count = 12;
  d.conflict_bytes = 192;
  return d;
}

call_counts sample_unmodelled_calls() {
  return {{"cuMemMap", 1}, {"cudaMemPrefetchAsync", 3}};
}

}  // namespace streamsan::testing
