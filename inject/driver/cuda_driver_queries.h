// driver_queries answered by the CUDA driver of the sanitized process.
//
// The library does not link libcuda (nor cudart): the driver that loaded it
// is already in the process, and every entry point is taken from it with
// cuGetProcAddress, so the library also loads (for tests, for `streamsan
// run -- /bin/true`) on machines without a driver.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "inject/model/driver_queries.h"

namespace streamsan::injection {

// A driver entry point by name and ABI version (cuGetProcAddress), or
// nullptr when the driver is not loaded or lacks it.
void* driver_entry_point(const char* name, int version) noexcept;

// Enqueueing host functions of the library's own, behind functions so that
// tests need no driver (the ThreadSanitizer bridge's markers, Note [Host
// functions are real host code]; Note [A host function that ran orders the
// host]).
struct marker_driver {
  // cuLaunchHostFunc(stream, fn, data) == CUDA_SUCCESS
  std::function<bool(std::uintptr_t stream, void (*fn)(void*), void* data)> enqueue;
  // cuStreamIsCapturing says the stream captures (or cannot tell)
  std::function<bool(std::uintptr_t stream)> capturing;
};

// The entry points of the driver that loaded the library.
marker_driver cuda_marker_driver();

class cuda_driver_queries final : public driver_queries {
 public:
  // The entry points are resolved by resolve(), once the driver is loaded:
  // the session may start earlier (an NVTX call before any CUDA call).
  cuda_driver_queries() = default;

  // Takes the entry points from the loaded driver; throws std::runtime_error
  // naming what is missing. Idempotent; queries call it if nobody did.
  void resolve();

  std::int32_t current_device() override;
  std::optional<stream_description> describe_stream(std::uintptr_t stream) override;
  std::optional<kernel_description> describe_kernel(std::uintptr_t kernel) override;
  std::optional<raw_graph> describe_graph(std::uintptr_t graph) override;
  std::string graph_read_failure() override;
  memory_kind untracked_memory_kind(std::uint64_t address, memory_side side) override;
  std::optional<capture_frontier> capture_frontier_of(std::uintptr_t stream) override;
  std::string function_name(std::uintptr_t fn) override;
  std::optional<std::pair<std::uint64_t, std::uint64_t>> allocation_range(
      std::uint64_t address) override;
  bool enqueue_host_function(std::uintptr_t stream, void (*fn)(void*), void* data) override;

 private:
  struct entry_points;
  bool append_graph(std::uintptr_t graph, raw_graph& out, int depth);
  // `node` is a CUgraphNode (the header stays free of cuda.h).
  std::optional<std::uint32_t> append_child_graph(void* node, std::uint32_t entry, raw_graph& out,
                                                  int depth);
  const entry_points& fn();

  std::once_flag resolve_once_;
  const entry_points* fn_ = nullptr;
  std::mutex names_mutex_;
  std::unordered_map<std::uintptr_t, std::string> function_names_;  // code addresses
  marker_driver markers_ = cuda_marker_driver();
};

}  // namespace streamsan::injection
