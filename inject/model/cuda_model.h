// The CUDA semantics the injection library models: it turns what a CUDA call
// did (decoded from the CUPTI callback by cupti_subscriber.cpp) into access-log
// records with our own ids, and keeps the handle tables, the allocation map
// and the kernel cache that this needs.
//
// Thread-safe: one mutex serializes the model, so that a handle created on
// one thread is known before another thread uses it, and the log order is the
// order in which calls completed.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "inject/model/access_inference.h"
#include "inject/model/allocation_map.h"
#include "inject/model/driver_queries.h"
#include "inject/model/handle_table.h"
#include "sanitizer/log/recorder.h"

namespace streamsan::injection {

// Where a call came from: the application's frames, innermost first.
struct call_site {
  std::span<const std::uint64_t> frames;
};

// A stream argument as the API passed it. Handle 0 names the legacy default
// stream, or the per-thread one in the _ptsz/_ptds variants (and in programs
// compiled with --default-stream per-thread, which call those variants).
struct stream_arg {
  std::uintptr_t handle = 0;
  bool per_thread_default = false;
};

inline constexpr std::uintptr_t legacy_stream_handle = 0x1;      // cudaStreamLegacy
inline constexpr std::uintptr_t per_thread_stream_handle = 0x2;  // cudaStreamPerThread

// An annotation's byte range (see include/streamsan/annotate.h).
struct annotated_range {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  access_mode mode = access_mode::read_write;
};

class cuda_model {
 public:
  cuda_model(recorder& rec, driver_queries& driver);
  cuda_model(const cuda_model&) = delete;
  cuda_model& operator=(const cuda_model&) = delete;

  // ---- streams ----
  void stream_created(const call_site& at, std::uintptr_t handle, unsigned flags,
                      std::int32_t priority);
  void stream_destroyed(const call_site& at, std::uintptr_t handle);
  void stream_synchronized(const call_site& at, stream_arg s);
  void stream_queried(const call_site& at, stream_arg s, bool complete);
  void device_synchronized(const call_site& at);

  // ---- events ----
  void event_created(const call_site& at, std::uintptr_t handle, unsigned cuda_flags);
  void event_destroyed(const call_site& at, std::uintptr_t handle);
  void event_recorded(const call_site& at, std::uintptr_t event, stream_arg s);
  void stream_waited_event(const call_site& at, stream_arg s, std::uintptr_t event);
  void event_synchronized(const call_site& at, std::uintptr_t event);
  void event_queried(const call_site& at, std::uintptr_t event, bool complete);

  // ---- memory ----
  void allocated(const call_site& at, std::uint64_t address, std::uint64_t size, memory_kind kind,
                 std::optional<stream_arg> stream = std::nullopt);
  // Unknown addresses (not allocated through a call we saw) are ignored.
  void freed(const call_site& at, std::uint64_t address, free_mode mode,
             std::optional<stream_arg> stream = std::nullopt);
  void copied(const call_site& at, stream_arg s, const memory_region& dst,
              const memory_region& src, bool async);
  void memset(const call_site& at, stream_arg s, const memory_region& dst, bool async);

  // ---- work ----
  // `kernel` is a CUfunction or CUkernel; 0 when only `fallback_name` is
  // known (then no accesses can be inferred).
  void kernel_launched(const call_site& at, stream_arg s, std::uintptr_t kernel,
                       const kernel_arguments& args, std::string_view fallback_name = {});
  void host_function_launched(const call_site& at, stream_arg s, std::uintptr_t fn);

  // ---- graphs ----
  void capture_began(const call_site& at, stream_arg s);
  void capture_ended(const call_site& at, stream_arg s, std::uintptr_t graph);
  void graph_destroyed(std::uintptr_t graph);
  void graph_instantiated(const call_site& at, std::uintptr_t exec, std::uintptr_t graph);
  void graph_exec_destroyed(std::uintptr_t exec);
  void graph_launched(const call_site& at, std::uintptr_t exec, stream_arg s);

  // ---- NVTX ----
  void range_pushed(const call_site& at, std::string_view message);
  void range_popped(const call_site& at);
  void marked(const call_site& at, std::string_view message);

  // ---- annotations (include/streamsan/annotate.h) ----
  // The next kernel launch (or host function) on `s` accesses exactly these
  // ranges, instead of what inference would find.
  void annotate_next_launch(stream_arg s, std::span<const annotated_range> ranges);
  void host_accessed(const call_site& at, std::span<const annotated_range> ranges,
                     std::string_view label);

  // A call the model does not handle; counted and listed at exit.
  void unmodelled(const call_site& at, std::string_view api);
  // Kernel handles may be recycled once their module is unloaded.
  void modules_unloaded();

  std::size_t live_allocations() const;

 private:
  struct kernel_info {
    string_id name{};
    std::vector<param_plan> plans;
  };

  void emit(const call_site& at, const record_body& body);
  stream_id resolve_stream_locked(const call_site& at, stream_arg s);
  stream_id new_stream_locked(const call_site& at, std::int32_t device, stream_flavor flavor,
                              std::int32_t priority);
  event_id resolve_event_locked(const call_site& at, std::uintptr_t handle);
  const kernel_info& kernel_locked(std::uintptr_t kernel);
  byte_range resolve_range_locked(const memory_region& r, memory_kind& kind);
  std::vector<access> resolve_annotation_locked(std::span<const annotated_range> ranges);
  bool take_annotation_locked(stream_id s, std::vector<access>& out);

  recorder& rec_;
  driver_queries& driver_;
  mutable std::mutex mutex_;

  handle_table<stream_id> streams_;
  handle_table<event_id> events_;
  handle_table<graph_id> graphs_;       // CUgraph -> the graph a capture made
  handle_table<graph_id> graph_execs_;  // CUgraphExec -> id used by graph_launch
  std::map<std::int32_t, stream_id> legacy_streams_;  // by device
  std::map<std::pair<std::uint32_t, std::int32_t>, stream_id> per_thread_streams_;
  std::unordered_map<std::uint32_t, graph_id> capturing_;  // raw(stream_id) -> graph
  std::unordered_map<std::uintptr_t, kernel_info> kernels_;
  std::unordered_map<std::uint32_t, std::vector<access>> annotations_;  // raw(stream_id)
  allocation_map allocations_;
  std::vector<access> scratch_;
};

}  // namespace streamsan::injection
