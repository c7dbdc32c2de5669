// A race with a timeline: thread#1 fills on stream#1, records event#1 on
// stream#3 (the wrong stream), stream#2 waits for it and reads.
#pragma once

#include "sanitizer/engine/diagnostic.h"

namespace streamsan::testing {

inline diagnostic race_with_timeline(diagnostic d) {
  auto t = std::make_shared<race_timeline>();
  const auto op = [](std::uint64_t seq, operation_kind kind, std::uint32_t stream,
                     std::uint32_t name) {
    timeline_op o;
    o.seq = seq;
    o.op = kind;
    o.context = stream == 0 ? context_kind::host_thread : context_kind::stream;
    o.stream = stream_id{stream};
    o.thread = thread_id{1};
    o.name = string_id{name};
    o.stack = stack_id{stream == 2 ? 2u : 1u};
    return o;
  };
  t->ops = {op(8, operation_kind::host_access, 0, 6),   // host write
            op(9, operation_kind::kernel, 1, 1),        // fill
            op(10, operation_kind::event_record, 3, 0),
            op(11, operation_kind::event_wait, 2, 0),
            op(12, operation_kind::kernel, 2, 2)};      // sum
  t->ops[2].event = event_id{1};
  t->ops[3].event = event_id{1};
  t->edges = {{0, 1, timeline_edge_kind::issue}, {2, 3, timeline_edge_kind::event}};
  t->previous = 1;
  t->current = 4;
  d.timeline = t;
  return d;
}

}  // namespace streamsan::testing
