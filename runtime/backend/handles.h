// Opaque handles that a backend hands out for its streams, events and graphs.
//
// Note [Backend handles are opaque values]
// A handle is whatever the backend needs to find its object again: the cuda
// backend stores a cudaStream_t / cudaEvent_t / cudaGraph_t /
// cudaGraphExec_t bit-cast to an integer, the sim backend an index into its
// own tables. The runtime only stores handles next to the objects it owns and
// passes them back; it never keys its state by a handle (handles are
// recycled by the driver, see Note [Never key state by CUDA handles] in
// sanitizer/log/ids.h). No value is reserved: the cuda legacy default stream
// may well be 0.
#pragma once

#include <cstdint>

namespace streamsan::rt {

enum class stream_handle : std::uint64_t {};
enum class event_handle : std::uint64_t {};
enum class graph_handle : std::uint64_t {};
enum class graph_exec_handle : std::uint64_t {};

// A stream together with the device it belongs to. Every backend call that
// enqueues work names the device, so a backend never depends on the calling
// thread's current device (the cuda backend selects the device itself).
struct device_stream {
  int device = 0;
  stream_handle handle{};
};

}  // namespace streamsan::rt
