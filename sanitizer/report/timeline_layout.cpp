#include "sanitizer/report/timeline_layout.h"

#include <algorithm>
#include <map>

namespace streamsan {
namespace {

// Streams and threads: one lane each, threads on top, then by id.
void stream_lanes(const race_timeline& t, timeline_layout& out) {
  std::map<std::pair<int, std::uint32_t>, std::uint32_t> index;  // (0 thread / 1 stream, id)
  const auto key = [](const timeline_op& op) {
    return op.context == context_kind::host_thread ? std::pair{0, raw(op.thread)}
                                                   : std::pair{1, raw(op.stream)};
  };
  for (const auto& op : t.ops) index.emplace(key(op), 0);
  for (auto& [k, i] : index) {
    i = static_cast<std::uint32_t>(out.lanes.size());
    out.lanes.push_back(
        {k.first == 0 ? to_string(thread_id{k.second}) : to_string(stream_id{k.second}),
         k.first == 0});
  }
  for (const auto& op : t.ops) out.lane.push_back(index.at(key(op)));
}

// Graph nodes: a node continues the lane of a dependency that is its
// lane's last node so far, else opens a lane, so chains read left to right.
void graph_lanes(const race_timeline& t, timeline_layout& out) {
  std::vector<std::uint32_t> last_of_lane;
  out.lane.assign(t.ops.size(), 0);
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    bool placed = false;
    for (const timeline_edge& e : t.edges) {
      if (e.to != i || e.from >= i) continue;
      const std::uint32_t lane = out.lane[e.from];
      if (last_of_lane[lane] == e.from) {
        out.lane[i] = lane;
        last_of_lane[lane] = i;
        placed = true;
        break;
      }
    }
    if (!placed) {
      out.lane[i] = static_cast<std::uint32_t>(last_of_lane.size());
      last_of_lane.push_back(i);
    }
  }
  for (std::size_t l = 0; l < last_of_lane.size(); ++l) {
    out.lanes.push_back({"chain " + std::to_string(l + 1), false});
  }
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace

timeline_layout lay_out(const race_timeline& t) {
  timeline_layout out;
  if (t.graph) {
    graph_lanes(t, out);
  } else {
    stream_lanes(t, out);
  }
  // The previous operation comes first when ops between it and the rest
  // were left out; a gap column marks the cut.
  const bool gap = !t.graph && (t.omitted > 0 || t.previous_outside_window) && t.previous == 0;
  std::uint32_t column = 0;
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    out.column.push_back(column++);
    if (gap && i == t.previous) {
      out.has_gap = true;
      out.gap_column = column++;
    }
  }
  out.columns = column;
  return out;
}

std::string timeline_label(const timeline_op& op, const log_tables& tables) {
  const auto name = tables.string(op.name);
  switch (op.op) {
    case operation_kind::kernel:
    case operation_kind::host_func:
      return name.empty() ? std::string(to_string(op.op)) : std::string(name);
    case operation_kind::graph_node:
      return "node " + std::to_string(op.graph_node) + (name.empty() ? "" : ": " + std::string(name));
    case operation_kind::event_record:
      return "record " + to_string(op.event);
    case operation_kind::event_wait:
      return "wait " + to_string(op.event);
    case operation_kind::event_synchronize:
      return "sync " + to_string(op.event);
    case operation_kind::event_query:
      return "query " + to_string(op.event) + (op.not_ready ? " (not ready)" : "");
    case operation_kind::stream_synchronize:
      return "sync " + to_string(op.target);
    case operation_kind::stream_query:
      return "query " + to_string(op.target) + (op.not_ready ? " (not ready)" : "");
    case operation_kind::stream_wait_stream:
      return "wait_stream " + to_string(op.target);
    case operation_kind::device_synchronize:
      return "device sync";
    case operation_kind::host_access:
      return name.empty() ? "host access" : std::string(name);
    case operation_kind::memcpy:
    case operation_kind::staged_upload:
    case operation_kind::memset:
    case operation_kind::alloc:
    case operation_kind::free:
    case operation_kind::stream_destroy:
    case operation_kind::event_destroy:
    case operation_kind::graph_launch:
      return std::string(to_string(op.op)) + (name.empty() ? "" : " " + quoted(name));
  }
  return std::string(to_string(op.op));
}

operation_ref as_operation(const timeline_op& op) {
  operation_ref o;
  o.seq = op.seq;
  o.op = op.op;
  o.context = op.context;
  o.stream = op.stream;
  o.thread = op.thread;
  o.name = op.name;
  o.stack = op.stack;
  o.graph = op.graph;
  o.graph_node = op.graph_node;
  return o;
}

std::string timeline_title(const timeline_op& op, const log_tables& tables) {
  std::string text(to_string(op.op));
  if (const auto name = tables.string(op.name); !name.empty()) text += " " + quoted(name);
  if (op.op == operation_kind::graph_node) {
    text += " (node " + std::to_string(op.graph_node) + " of " + to_string(op.graph) + ")";
  } else if (op.context == context_kind::stream) {
    text += " on " + to_string(op.stream) + " (" + to_string(op.thread) + ")";
  } else {
    text += " on " + to_string(op.thread);
  }
  if (!is_none(op.event)) text += ", " + to_string(op.event);
  if (!is_none(op.target)) text += ", " + to_string(op.target);
  if (op.not_ready) text += ", returned not-ready";
  return text + ", seq " + std::to_string(op.seq);
}

}  // namespace streamsan
