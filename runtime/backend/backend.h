// The backend interface: what the runtime needs from a device. Implemented by
// the simulated device (runtime/sim, make_sim_backend) and by CUDA
// (runtime/cuda, make_cuda_backend).
//
// Note [The backend is execution only]
// A backend executes; it does not instrument, validate or remember names.
// The runtime (runtime/*.cpp) assigns streamsan ids, checks misuse (destroyed
// objects, device mismatches, capture rules, sync debug mode), emits the
// access log and only then calls the backend. A backend therefore sees only
// well-formed calls on live handles and need not check them again; when the
// device itself fails it throws cuda_error (runtime/errors.h) naming the
// CUDA call, e.g. cuda_error(error_code::invalid_value, "cudaMemcpyAsync",
// "...", cudaErrorInvalidValue).
//
// Note [Backend semantics are CUDA's]
// Every method has the semantics of the CUDA runtime call named in its
// comment, as summarized in shared/reference/semantics.md (rule ids S-...).
// In particular a backend must honor stream order (S-STREAM-1), events
// (S-EVENT-*), the legacy default stream's implicit synchronization with
// blocking streams (S-DEFAULT-1..3), host functions (S-HOSTFN-1), the
// host-synchronization behaviour of copies and memsets (S-COPY-*, as
// sanitizer/log/copy_synchronization.h tabulates it for the engine), frees
// (S-MEM-5) and graphs (S-GRAPH-*). The sim backend must never synchronize
// where the documentation only says an operation *might* (pageable async
// copies run asynchronously there), so that code relying on it fails.
//
// Note [Threads and the backend]
// Methods may be called from any host thread, concurrently. Blocking
// methods (synchronize_*, a synchronous memcpy, free of device memory) may
// be called while other threads keep enqueueing work. Host functions passed
// to launch_host_func must not call the backend (S-HOSTFN-1); the runtime
// enforces this before it reaches the backend.
//
// Note [Devices are explicit]
// Every method that concerns a device takes its index, or a device_stream
// that carries it. A backend must not depend on, and must leave unchanged,
// the calling thread's current device (the cuda backend saves and restores
// cudaGetDevice around calls that need it). The runtime keeps the
// user-visible current device itself (runtime/device.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "runtime/backend/device_properties.h"
#include "runtime/backend/handles.h"
#include "runtime/backend/kernel_args.h"
#include "runtime/backend/sim_options.h"
#include "runtime/errors.h"
#include "sanitizer/log/record.h"  // memory_kind, event_flags

namespace streamsan::rt {

// cudaStreamCaptureMode.
enum class capture_mode : std::uint8_t {
  global,        // cudaStreamCaptureModeGlobal (the default)
  thread_local_, // cudaStreamCaptureModeThreadLocal
  relaxed,       // cudaStreamCaptureModeRelaxed
};

// One copy (S-COPY-1, S-COPY-2, S-COPY-5). The memory kinds say what the
// pointers are; the backend derives the direction (cudaMemcpyKind) and the
// host-synchronization behaviour from them. memory_kind::cached_block and
// stream_ordered memory behave like device memory; managed memory too.
struct copy_request {
  void* dst = nullptr;
  const void* src = nullptr;
  std::uint64_t bytes = 0;
  memory_kind dst_kind = memory_kind::device;
  memory_kind src_kind = memory_kind::device;
  int dst_device = 0;  // for device-like kinds; ignored for host kinds
  int src_device = 0;
  // false: cudaMemcpy (cudaMemcpyPeer across devices). It is issued to the
  //   default stream of `stream.device`, which the runtime passes in `stream`
  //   (the legacy default stream, or the calling thread's per-thread default
  //   stream in per-thread mode): the sim orders it there; cuda may ignore
  //   the handle since cudaMemcpy picks the stream itself.
  // true: cudaMemcpyAsync (cudaMemcpyPeerAsync) on `stream`.
  bool async = false;
  device_stream stream;
};

// cudaMemset / cudaMemsetAsync (S-COPY-4). `value` is a byte.
struct memset_request {
  void* dst = nullptr;
  int value = 0;
  std::uint64_t bytes = 0;
  memory_kind dst_kind = memory_kind::device;
  bool async = false;
  device_stream stream;  // as in copy_request
};

// A host function (cudaLaunchHostFunc). Runs on a host thread the backend
// chooses (a CUDA driver thread, or on sim the thread that drives progress).
using host_function = std::function<void()>;

class backend {
 public:
  virtual ~backend() = default;

  // "sim" or "cuda".
  virtual std::string_view name() const noexcept = 0;

  // ---- devices (S-DEV-1, S-DEV-2) ----

  // cudaGetDeviceCount: the visible devices, numbered 0..count-1.
  virtual int device_count() = 0;
  // cudaGetDeviceProperties.
  virtual device_properties properties(int device) = 0;
  // cudaMemGetInfo on `device`.
  virtual memory_info mem_get_info(int device) = 0;
  // cudaDeviceCanAccessPeer (false for device == peer).
  virtual bool can_access_peer(int device, int peer) = 0;
  // cudaDeviceSynchronize on `device`: blocks until all work on all its
  // streams has completed (S-SYNC-1).
  virtual void synchronize_device(int device) = 0;

  // ---- streams (S-STREAM-*, S-DEFAULT-*) ----

  // cudaStreamCreateWithPriority(&s, non_blocking ? cudaStreamNonBlocking :
  // cudaStreamDefault, priority) on `device`. `priority` is within
  // stream_priority_range(device) (the runtime clamps it, like CUDA).
  virtual stream_handle create_stream(int device, bool non_blocking, int priority) = 0;
  // cudaStreamDestroy: returns at once; pending work still completes (S-STREAM-9).
  virtual void destroy_stream(device_stream stream) = 0;
  // cudaDeviceGetStreamPriorityRange.
  virtual priority_range stream_priority_range(int device) = 0;
  // The legacy default stream of `device` (cudaStreamLegacy). Same value on
  // every call; never destroyed.
  virtual stream_handle legacy_default_stream(int device) = 0;
  // The calling host thread's per-thread default stream of `device`
  // (cudaStreamPerThread). Valid only on the calling thread: the runtime
  // uses it from that thread only. Never destroyed.
  virtual stream_handle per_thread_default_stream(int device) = 0;
  // cudaStreamQuery: true iff all work submitted so far has completed (S-STREAM-4).
  virtual bool query_stream(device_stream stream) = 0;
  // cudaStreamSynchronize (S-STREAM-5).
  virtual void synchronize_stream(device_stream stream) = 0;
  // cudaStreamWaitEvent(stream, event, 0) (S-EVENT-2). `event` may belong to
  // another device. An event never recorded orders nothing (S-EVENT-3).
  virtual void stream_wait_event(device_stream stream, event_handle event) = 0;

  // ---- events (S-EVENT-*) ----

  // cudaEventCreateWithFlags on `device`; flags are streamsan::event_flags
  // (event_flag_timing absent => cudaEventDisableTiming).
  virtual event_handle create_event(int device, std::uint32_t flags) = 0;
  // cudaEventDestroy.
  virtual void destroy_event(event_handle event) = 0;
  // cudaEventRecord. `stream` is on the event's device (checked by the runtime).
  virtual void record_event(event_handle event, device_stream stream) = 0;
  // cudaEventQuery: true when the captured work completed (or never recorded).
  virtual bool query_event(event_handle event) = 0;
  // cudaEventSynchronize.
  virtual void synchronize_event(event_handle event) = 0;
  // cudaEventElapsedTime in milliseconds. The runtime has checked that both
  // have timing, were recorded and completed; a backend error is cuda_error.
  virtual float elapsed_time(event_handle start, event_handle end) = 0;

  // ---- memory (S-MEM-5, S-MEM-6) ----

  // Allocates `bytes` of `kind`:
  //   device -> cudaMalloc, pinned_host -> cudaMallocHost, managed ->
  //   cudaMallocManaged, stream_ordered -> cudaMallocAsync on `stream`,
  //   pageable_host -> host heap (std::malloc).
  // `stream` is used for stream_ordered only. kind == cached_block is not a
  // backend kind (the runtime's caching allocator carves those itself).
  // Returns nullptr when the device is out of memory (the runtime's caching
  // allocator frees its cache and retries); throws cuda_error otherwise.
  // Alignment is at least 256 bytes.
  virtual void* allocate(memory_kind kind, int device, std::uint64_t bytes,
                         device_stream stream) = 0;
  // Frees what allocate returned, with the same kind and device:
  //   device, managed -> cudaFree (synchronizes the device first),
  //   pinned_host -> cudaFreeHost, stream_ordered -> cudaFreeAsync on
  //   `stream`, pageable_host -> std::free.
  virtual void deallocate(memory_kind kind, int device, void* ptr, device_stream stream) = 0;

  // cudaMemcpy / cudaMemcpyAsync (and the Peer forms), see copy_request.
  virtual void memcpy(const copy_request& request) = 0;
  // cudaMemset / cudaMemsetAsync, see memset_request.
  virtual void memset(const memset_request& request) = 0;

  // ---- work ----

  // Launches one kernel of the kernel library on `stream`; asynchronous.
  virtual void launch_kernel(device_stream stream, const kernel_args& args) = 0;
  // cudaLaunchHostFunc: `fn` runs after all prior work on `stream`; later
  // work on `stream` waits for it (S-HOSTFN-1).
  virtual void launch_host_func(device_stream stream, host_function fn) = 0;

  // ---- graphs (S-GRAPH-1, S-GRAPH-2) ----

  // cudaStreamBeginCapture. Work issued to `stream` (and to streams that
  // join the capture by waiting on an event recorded on a capturing stream)
  // is recorded, not executed, until end_capture.
  virtual void begin_capture(device_stream stream, capture_mode mode) = 0;
  // cudaStreamEndCapture: the captured graph.
  virtual graph_handle end_capture(device_stream stream) = 0;
  // cudaStreamIsCapturing == cudaStreamCaptureStatusActive.
  virtual bool is_capturing(device_stream stream) = 0;
  // cudaGraphInstantiate.
  virtual graph_exec_handle instantiate(graph_handle graph) = 0;
  // cudaGraphLaunch: the nodes run respecting only the graph's edges; the
  // launch is ordered in `stream` like one operation.
  virtual void launch_graph(graph_exec_handle exec, device_stream stream) = 0;
  // cudaGraphDestroy / cudaGraphExecDestroy.
  virtual void destroy_graph(graph_handle graph) = 0;
  virtual void destroy_graph_exec(graph_exec_handle exec) = 0;

  // ---- annotations (S-NVTX-1) ----

  // nvtxRangePushA / nvtxRangePop / nvtxMarkA; the sim does nothing.
  virtual void nvtx_push(std::string_view message) = 0;
  virtual void nvtx_pop() = 0;
  virtual void nvtx_mark(std::string_view message) = 0;
};

// The simulated device (runtime/sim): deterministic for a given seed and
// sequence of calls. See docs/runtime.md.
std::unique_ptr<backend> make_sim_backend(sim_options options = {});

// The CUDA backend. Implemented in runtime/cuda when streamsan is built with
// CUDA (STREAMSAN_HAVE_CUDA); otherwise it throws runtime_error("streamsan
// was built without CUDA").
std::unique_ptr<backend> make_cuda_backend();

// True when the CUDA backend is built and at least one GPU is visible
// (cudaGetDeviceCount > 0). Never throws. Used by STREAMSAN_BACKEND=auto.
bool cuda_device_present() noexcept;

// Which backend the runtime uses (STREAMSAN_BACKEND=sim|cuda|auto).
enum class backend_kind : std::uint8_t {
  sim,
  cuda,
  automatic,  // cuda when cuda_device_present(), sim otherwise
};

std::string_view to_string(backend_kind kind) noexcept;

// Parses "sim" / "cuda" / "auto"; throws usage_error naming the value and
// `where` (e.g. "STREAMSAN_BACKEND") otherwise.
backend_kind parse_backend_kind(std::string_view text, std::string_view where);

// Makes the backend `kind` names; automatic resolves as above.
std::unique_ptr<backend> make_backend(backend_kind kind, const sim_options& sim);

}  // namespace streamsan::rt
