// What the model asks the CUDA driver, behind an interface so that the model
// is tested with a fake on machines without a GPU. The real implementation
// (cuda_driver_queries.cpp) calls the driver API from inside the callbacks.
// Handles are raw integers here: no CUDA header is needed to use the model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "inject/model/access_inference.h"
#include "sanitizer/log/record.h"

namespace streamsan::injection {

struct stream_description {
  std::int32_t device = 0;
  unsigned flags = 0;  // cudaStreamNonBlocking = 1
  std::int32_t priority = 0;
};

struct kernel_description {
  std::string mangled_name;
  std::vector<param_layout> params;
  bool layout_known = false;
};

enum class memory_side : std::uint8_t { host, device, unknown };

// A span of memory an operation touches: [address, address + size).
struct memory_region {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  memory_side side = memory_side::unknown;
};

enum class raw_node_kind : std::uint8_t {
  kernel,
  memcpy,
  memset,
  host,
  empty,
  event_record,
  event_wait,
  // A conditional node (Note [Conditional nodes]): `handle` names it; the
  // model splices in the bodies it saw made, or lists it.
  conditional,
  // Graph memory nodes (Note [Graph allocations]): `dst` is the allocation
  // (address and size) an alloc node makes, or the address a free node frees.
  mem_alloc,
  mem_free,
  other,
};

// CU_GRAPH_COND_TYPE_*: IF runs body 0 (or body 1 when the condition is
// zero), WHILE runs body 0 again and again, SWITCH runs body n.
enum class conditional_kind : std::uint8_t { if_then, while_loop, switch_case };

// One node of a graph as the driver describes it (child graphs flattened).
struct raw_graph_node {
  raw_node_kind kind = raw_node_kind::other;
  std::uintptr_t handle = 0;  // the CUgraphNode (Note [Where graph nodes were made])
  std::uintptr_t owner = 0;   // the CUgraph that holds it (a child graph's, a body's); 0: the graph read
  std::uintptr_t kernel = 0;  // kernel: CUfunction or CUkernel
  kernel_arguments args;      // kernel: valid while the graph is unchanged
  memory_region dst;          // memcpy, memset, mem_alloc, mem_free
  std::int32_t device = 0;    // mem_alloc: the device that holds it
  memory_region src;          // memcpy
  std::uintptr_t host_fn = 0;
  std::uintptr_t event = 0;  // event_record, event_wait: the CUevent (Note [Event nodes])
  std::string what;  // other: the node type, for the report
};

struct raw_graph {
  std::vector<raw_graph_node> nodes;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;  // from, to
};

// The capture a stream is in: the graph it builds, and the nodes that work
// captured next would depend on. Right after a call that captured work, they
// are the node(s) that call added.
struct capture_frontier {
  std::uintptr_t graph = 0;  // the CUgraph
  std::vector<std::uintptr_t> nodes;  // CUgraphNodes
};

class driver_queries {
 public:
  virtual ~driver_queries() = default;
  // The device of the calling thread's current context.
  virtual std::int32_t current_device() = 0;
  // A stream the library did not see created (made inside a library).
  virtual std::optional<stream_description> describe_stream(std::uintptr_t stream) = 0;
  // Name and parameter layout of a CUfunction or CUkernel.
  virtual std::optional<kernel_description> describe_kernel(std::uintptr_t kernel) = 0;
  virtual std::optional<raw_graph> describe_graph(std::uintptr_t graph) = 0;
  // Why the calling thread's last describe_graph() gave nullopt, for the
  // report ("cuGraphGetNodes failed: CUDA_ERROR_INVALID_VALUE (1)"); empty
  // when unknown.
  virtual std::string graph_read_failure() { return {}; }
  // What untracked memory at `address` is (pageable host, device, ...).
  virtual memory_kind untracked_memory_kind(std::uint64_t address, memory_side side) = 0;
  // cuStreamGetCaptureInfo; nullopt when the stream is not capturing.
  virtual std::optional<capture_frontier> capture_frontier_of(std::uintptr_t stream) = 0;
  // The symbol of a host function, for reports.
  virtual std::string function_name(std::uintptr_t fn) = 0;
  // The base and size of the driver's allocation that holds `address`
  // (memory mapped from another process: Note [IPC memory handles]);
  // nullopt when the driver does not know it. Not pure: only the model's
  // IPC calls ask.
  virtual std::optional<std::pair<std::uint64_t, std::uint64_t>> allocation_range(
      std::uint64_t /*address*/) {
    return std::nullopt;
  }
  // Enqueues fn(data) on `stream` (the driver's handle) as a host function
  // of the library's own (Note [A host function that ran orders the host]
  // in cuda_model.cpp). False when nothing was enqueued: the stream
  // captures (the function would become a node of the program's graph),
  // the driver refused, or there is no driver (the fakes).
  virtual bool enqueue_host_function(std::uintptr_t /*stream*/, void (* /*fn*/)(void*),
                                     void* /*data*/) {
    return false;
  }
};

}  // namespace streamsan::injection
