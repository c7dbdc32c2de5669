// CUDA graphs (S-GRAPH-1, S-GRAPH-2), in the shape of torch.cuda.CUDAGraph.
//
// Work issued to a capturing stream is recorded, not executed: kernels,
// copies, memsets, host functions, and event records / waits. A stream joins
// the capture by waiting on an event recorded on a capturing stream, and must
// rejoin the origin stream (the origin waits on an event it recorded) before
// capture_end. The graph keeps stream order within each stream and the event
// edges between streams; a launch runs it respecting only those edges.
//
// Note [Captured work is not logged as executed]
// While a stream captures, the runtime emits no kernel_launch, memcpy,
// memset, host_func, event_record or event_wait records for the captured
// work: it has not run. capture_begin / capture_end emit
// graph_capture_begin / graph_capture_end, instantiation (at capture_end)
// emits graph_instantiate with every node's accesses and the edges, and each
// launch emits graph_launch.
//
// Synchronizing a capturing stream or its device is an error (usage_error,
// and the capture is invalidated: capture_end then throws cuda_error
// capture_invalidated), as is legacy-default-stream work that would
// implicitly synchronize with a capturing blocking stream (global mode).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/backend/backend.h"
#include "runtime/stream.h"
#include "sanitizer/log/ids.h"

namespace streamsan::rt {

class graph {
 public:
  graph();
  graph(graph&& other) noexcept;
  graph& operator=(graph&& other) noexcept;
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;
  ~graph() noexcept;

  graph_id id() const noexcept { return id_; }

  // Starts capturing on `s`. usage_error for the legacy default stream, a
  // stream already capturing, or a graph already captured.
  void capture_begin(stream_ref s, capture_mode mode = capture_mode::global);
  // Ends the capture and instantiates the graph.
  void capture_end();
  bool captured() const;
  std::size_t node_count() const;
  std::size_t edge_count() const;

  // Launches on `s` / on the current stream of the capture stream's device.
  void launch(stream_ref s) const;
  void replay() const;

  // Destroys the captured graph; the object can capture again.
  void reset() noexcept;

 private:
  graph_id id_{};
  std::uint64_t session_ = 0;
};

// Scoped capture (torch.cuda.graph): makes `s` current (as stream_guard),
// begins capturing on it; end() or the destructor ends the capture. The
// destructor cannot throw: an error there is printed to stderr.
class graph_capture {
 public:
  graph_capture(graph& g, stream_ref s, capture_mode mode = capture_mode::global);
  ~graph_capture() noexcept;
  graph_capture(const graph_capture&) = delete;
  graph_capture& operator=(const graph_capture&) = delete;

  void end();

 private:
  graph* graph_;
  bool ended_ = false;
  int previous_device_ = 0;
  stream_ref previous_stream_;
};

// True while the current stream of the current device captures.
bool is_current_stream_capturing();

}  // namespace streamsan::rt
