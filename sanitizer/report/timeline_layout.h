// Where each operation of a race timeline goes in a picture: its lane (a
// stream or a host thread; for a graph, a chain of dependent nodes) and its
// column (issue order). Shared by the HTML report and the Chrome trace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/log/log_tables.h"

namespace streamsan {

struct timeline_lane {
  std::string label;  // "thread#1", "stream#2", "chain 1"
  bool host = false;
};

struct timeline_layout {
  std::vector<timeline_lane> lanes;  // top to bottom: host threads, then streams
  std::vector<std::uint32_t> lane;   // per op
  std::vector<std::uint32_t> column; // per op; a gap column follows previous when ops were left out
  std::uint32_t columns = 0;
  // The column of the "… not shown" marker, when the timeline has a gap.
  bool has_gap = false;
  std::uint32_t gap_column = 0;
};

timeline_layout lay_out(const race_timeline& timeline);

// The operation's label in a picture: "k_read", "event record event#3",
// "node 2: k_read", "synchronize stream#1".
std::string timeline_label(const timeline_op& op, const log_tables& tables);

// The operation as an operation_ref, so that its stack folds as the
// report's do ("launch of k<<<…>>> from ...").
operation_ref as_operation(const timeline_op& op);

// One line on what the operation is, for tooltips and stack panels:
// "kernel 'k_read' on stream#2 (thread#1), seq 12".
std::string timeline_title(const timeline_op& op, const log_tables& tables);

}  // namespace streamsan
