// The CUDA backend: runtime/backend/backend.h over cudart (linked
// statically). Every method is the cudart call its comment in backend.h
// names; see docs/cuda-backend.md.
//
// Note [The cuda backend keeps no state]
// Streams, events and graphs are CUDA's handles (native_handles.h) and CUDA
// keeps everything about them; the backend holds no tables and no locks, so
// concurrent calls from several host threads (Note [Threads and the
// backend]) are exactly as safe as cudart is.
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "runtime/backend/backend.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/default_stream_calls.h"
#include "runtime/cuda/device_scope.h"
#include "runtime/cuda/host_function_trampoline.h"
#include "runtime/cuda/kernel_library.h"
#include "runtime/cuda/native_handles.h"
#include "sanitizer/engine/diagnostic.h"  // to_string(memory_kind)
#include "sanitizer/log/copy_synchronization.h"

namespace streamsan::rt {

namespace cuda {

namespace {

// backend::allocate promises at least this alignment; cudaMalloc and friends
// give 256 bytes or more, the host heap is asked for it.
constexpr std::uint64_t host_alignment = 256;

// The direction of a copy from the memory kinds (copy_request). Managed
// memory may be resident on either side, so CUDA infers that direction from
// the pointers (unified addressing).
cudaMemcpyKind copy_kind(const copy_request& r) noexcept {
  if (r.src_kind == memory_kind::managed || r.dst_kind == memory_kind::managed) {
    return cudaMemcpyDefault;
  }
  const bool from_host = !is_device_memory(r.src_kind);
  const bool to_host = !is_device_memory(r.dst_kind);
  if (from_host && to_host) return cudaMemcpyHostToHost;
  if (from_host) return cudaMemcpyHostToDevice;
  if (to_host) return cudaMemcpyDeviceToHost;
  return cudaMemcpyDeviceToDevice;
}

// Two device-memory sides on different devices: cudaMemcpyPeer(Async).
bool is_peer_copy(const copy_request& r) noexcept {
  return copy_kind(r) == cudaMemcpyDeviceToDevice && r.src_device != r.dst_device;
}

std::string describe_copy(const copy_request& r) {
  return std::to_string(r.bytes) + " bytes from " + describe_pointer(r.src) + " to " +
         describe_pointer(r.dst) + " on " + describe(r.stream);
}

std::string describe_memset(const memset_request& r) {
  return std::to_string(r.bytes) + " bytes at " + describe_pointer(r.dst) + " to " +
         std::to_string(r.value) + " on " + describe(r.stream);
}

std::string describe_allocation(memory_kind kind, int device, std::uint64_t bytes) {
  return std::to_string(bytes) + " bytes of " + std::string(streamsan::to_string(kind)) + " memory on " +
         describe_device(device);
}

// Runs `allocate(&ptr)` (a cudaMalloc* call). Out of memory returns nullptr
// (backend::allocate); any other failure throws.
template <class Allocate, class Describe>
void* allocated_or_null(std::string_view call, Allocate&& allocate, Describe&& describe_request) {
  void* ptr = nullptr;
  const cudaError_t status = allocate(&ptr);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return nullptr;
  }
  check(status, call, describe_request);
  return ptr;
}

[[noreturn]] void throw_not_a_backend_kind(std::string_view call) {
  throw cuda_error(error_code::invalid_value, call,
                   "cached blocks are carved by the runtime's caching allocator, not by the "
                   "backend");
}

class cuda_backend final : public backend {
 public:
  cuda_backend() {
    // Fail here, with CUDA's reason, rather than at the first stream.
    if (device_count() == 0) {
      throw cuda_error(error_code::invalid_device, "cudaGetDeviceCount", "no visible CUDA device",
                       static_cast<int>(cudaErrorNoDevice));
    }
  }

  std::string_view name() const noexcept override { return "cuda"; }

  // ---- devices ----

  int device_count() override {
    int count = 0;
    check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    return count;
  }

  device_properties properties(int device) override {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties",
          [&] { return describe_device(device); });
    device_properties result;
    result.name = prop.name;
    result.major = prop.major;
    result.minor = prop.minor;
    result.total_memory = prop.totalGlobalMem;
    result.multi_processor_count = prop.multiProcessorCount;
    result.concurrent_managed_access = prop.concurrentManagedAccess != 0;
    result.is_integrated = prop.integrated != 0;
    return result;
  }

  memory_info mem_get_info(int device) override {
    const device_scope scope(device);
    std::size_t free = 0;
    std::size_t total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo", [&] { return describe_device(device); });
    return {free, total};
  }

  bool can_access_peer(int device, int peer) override {
    if (device == peer) return false;
    int can = 0;
    check(cudaDeviceCanAccessPeer(&can, device, peer), "cudaDeviceCanAccessPeer",
          [&] { return describe_device(device) + " and " + describe_device(peer); });
    return can != 0;
  }

  void synchronize_device(int device) override {
    const device_scope scope(device);
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize",
          [&] { return describe_device(device); });
  }

  // ---- streams ----

  stream_handle create_stream(int device, bool non_blocking, int priority) override {
    const device_scope scope(device);
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithPriority(&stream,
                                       non_blocking ? cudaStreamNonBlocking : cudaStreamDefault,
                                       priority),
          "cudaStreamCreateWithPriority", [&] {
            return describe_device(device) + ", priority " + std::to_string(priority) +
                   (non_blocking ? ", non-blocking" : ", blocking");
          });
    return to_handle<stream_handle>(stream);
  }

  void destroy_stream(device_stream stream) override {
    const device_scope scope(stream.device);
    check(cudaStreamDestroy(native(stream)), "cudaStreamDestroy",
          [&] { return describe(stream); });
  }

  priority_range stream_priority_range(int device) override {
    const device_scope scope(device);
    priority_range range;
    check(cudaDeviceGetStreamPriorityRange(&range.least, &range.greatest),
          "cudaDeviceGetStreamPriorityRange", [&] { return describe_device(device); });
    return range;
  }

  stream_handle legacy_default_stream(int) override {
    return to_handle<stream_handle>(cudaStreamLegacy);
  }

  stream_handle per_thread_default_stream(int) override {
    return to_handle<stream_handle>(cudaStreamPerThread);
  }

  bool query_stream(device_stream stream) override {
    const device_scope scope(stream.device);
    const cudaError_t status = cudaStreamQuery(native(stream));
    if (status == cudaErrorNotReady) return false;
    check(status, "cudaStreamQuery", [&] { return describe(stream); });
    return true;
  }

  void synchronize_stream(device_stream stream) override {
    const device_scope scope(stream.device);
    check(cudaStreamSynchronize(native(stream)), "cudaStreamSynchronize",
          [&] { return describe(stream); });
  }

  void stream_wait_event(device_stream stream, event_handle event) override {
    const device_scope scope(stream.device);
    check(cudaStreamWaitEvent(native(stream), native(event), 0), "cudaStreamWaitEvent",
          [&] { return describe(stream) + " waiting on " + describe(event); });
  }

  // ---- events ----

  event_handle create_event(int device, std::uint32_t flags) override {
    unsigned cuda_flags = cudaEventDefault;
    if ((flags & event_flag_timing) == 0) cuda_flags |= cudaEventDisableTiming;
    if ((flags & event_flag_blocking_sync) != 0) cuda_flags |= cudaEventBlockingSync;
    if ((flags & event_flag_interprocess) != 0) cuda_flags |= cudaEventInterprocess;
    const device_scope scope(device);
    cudaEvent_t event = nullptr;
    check(cudaEventCreateWithFlags(&event, cuda_flags), "cudaEventCreateWithFlags",
          [&] { return describe_device(device) + ", flags " + std::to_string(cuda_flags); });
    return to_handle<event_handle>(event);
  }

  void destroy_event(event_handle event) override {
    check(cudaEventDestroy(native(event)), "cudaEventDestroy", [&] { return describe(event); });
  }

  void record_event(event_handle event, device_stream stream) override {
    const device_scope scope(stream.device);
    check(cudaEventRecord(native(event), native(stream)), "cudaEventRecord",
          [&] { return describe(event) + " on " + describe(stream); });
  }

  bool query_event(event_handle event) override {
    const cudaError_t status = cudaEventQuery(native(event));
    if (status == cudaErrorNotReady) return false;
    check(status, "cudaEventQuery", [&] { return describe(event); });
    return true;
  }

  void synchronize_event(event_handle event) override {
    check(cudaEventSynchronize(native(event)), "cudaEventSynchronize",
          [&] { return describe(event); });
  }

  float elapsed_time(event_handle start, event_handle end) override {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, native(start), native(end)), "cudaEventElapsedTime",
          [&] { return "from " + describe(start) + " to " + describe(end); });
    return ms;
  }

  // ---- memory ----

  void* allocate(memory_kind kind, int device, std::uint64_t bytes,
                 device_stream stream) override {
    // A zero-byte request still gets a distinct, freeable address, as on sim.
    const std::uint64_t size = std::max<std::uint64_t>(bytes, 1);
    const auto request = [&] { return describe_allocation(kind, device, bytes); };
    switch (kind) {
      case memory_kind::device: {
        const device_scope scope(device);
        return allocated_or_null(
            "cudaMalloc", [&](void** p) { return cudaMalloc(p, size); }, request);
      }
      case memory_kind::pinned_host: {
        const device_scope scope(device);
        return allocated_or_null(
            "cudaMallocHost", [&](void** p) { return cudaMallocHost(p, size); }, request);
      }
      case memory_kind::managed: {
        const device_scope scope(device);
        return allocated_or_null(
            "cudaMallocManaged",
            [&](void** p) { return cudaMallocManaged(p, size, cudaMemAttachGlobal); }, request);
      }
      case memory_kind::stream_ordered: {
        const device_scope scope(stream.device);
        return allocated_or_null(
            "cudaMallocAsync", [&](void** p) { return cudaMallocAsync(p, size, native(stream)); },
            [&] { return request() + " on " + describe(stream); });
      }
      case memory_kind::pageable_host: {
        const std::uint64_t rounded = (size + host_alignment - 1) / host_alignment * host_alignment;
        return std::aligned_alloc(host_alignment, rounded);
      }
      case memory_kind::cached_block: throw_not_a_backend_kind("allocate");
    }
    throw_not_a_backend_kind("allocate");
  }

  void deallocate(memory_kind kind, int device, void* ptr, device_stream stream) override {
    const auto what = [&] {
      return describe_pointer(ptr) + " (" + std::string(streamsan::to_string(kind)) + " memory on " +
             describe_device(device) + ')';
    };
    switch (kind) {
      case memory_kind::device:
      case memory_kind::managed: {
        const device_scope scope(device);
        check(cudaFree(ptr), "cudaFree", what);
        return;
      }
      case memory_kind::pinned_host: check(cudaFreeHost(ptr), "cudaFreeHost", what); return;
      case memory_kind::stream_ordered: {
        const device_scope scope(stream.device);
        check(cudaFreeAsync(ptr, native(stream)), "cudaFreeAsync",
              [&] { return what() + " on " + describe(stream); });
        return;
      }
      case memory_kind::pageable_host: std::free(ptr); return;
      case memory_kind::cached_block: throw_not_a_backend_kind("deallocate");
    }
  }

  void memcpy(const copy_request& r) override {
    const device_scope scope(r.stream.device);
    const auto what = [&] { return describe_copy(r); };
    const bool peer = is_peer_copy(r);
    if (r.async) {
      if (peer) {
        check(cudaMemcpyPeerAsync(r.dst, r.dst_device, r.src, r.src_device, r.bytes,
                                  native(r.stream)),
              "cudaMemcpyPeerAsync", what);
      } else {
        check(cudaMemcpyAsync(r.dst, r.src, r.bytes, copy_kind(r), native(r.stream)),
              "cudaMemcpyAsync", what);
      }
      return;
    }
    if (peer) {
      // cudaMemcpyPeer has no per-thread form: it is ordered on the legacy
      // default stream in both modes, as in a CUDA program.
      check(cudaMemcpyPeer(r.dst, r.dst_device, r.src, r.src_device, r.bytes), "cudaMemcpyPeer",
            what);
    } else if (is_per_thread_default(r.stream)) {
      check(per_thread_default::memcpy(r.dst, r.src, r.bytes, copy_kind(r)), "cudaMemcpy", what);
    } else {
      check(legacy_default::memcpy(r.dst, r.src, r.bytes, copy_kind(r)), "cudaMemcpy", what);
    }
  }

  // Note [The backend keeps the documented memset synchronization]
  // S-COPY-4 (the driver API's "API synchronization behavior" page):
  // cudaMemset into pinned host memory or a Unified Memory region is fully
  // synchronous. The runtime API's own entry names only pinned memory, so
  // the backend does not leave the managed case to the driver: it then
  // synchronizes the default stream the memset went to, which costs nothing
  // when the driver already waited. What the driver does by itself is
  // checked by examples/programs/memset_managed.cu under streamsan run.
  void memset(const memset_request& r) override {
    const device_scope scope(r.stream.device);
    const auto what = [&] { return describe_memset(r); };
    if (r.async) {
      check(cudaMemsetAsync(r.dst, r.value, r.bytes, native(r.stream)), "cudaMemsetAsync", what);
      return;
    }
    if (is_per_thread_default(r.stream)) {
      check(per_thread_default::memset(r.dst, r.value, r.bytes), "cudaMemset", what);
    } else {
      check(legacy_default::memset(r.dst, r.value, r.bytes), "cudaMemset", what);
    }
    if (memset_completes_before_return(false, r.dst_kind)) {
      check(cudaStreamSynchronize(native(r.stream)), "cudaStreamSynchronize",
            [&] { return "completing the synchronous memset of " + what(); });
    }
  }

  // ---- work ----

  void launch_kernel(device_stream stream, const kernel_args& args) override {
    const device_scope scope(stream.device);
    check(launch_library_kernel(native(stream), args), "cudaLaunchKernel", [&] {
      return "kernel " + std::string(to_string(kind_of(args))) + " on " + describe(stream);
    });
  }

  void launch_host_func(device_stream stream, host_function fn) override {
    const device_scope scope(stream.device);
    enqueue_host_function(native(stream), std::move(fn), describe(stream));
  }

  // ---- graphs ----

  void begin_capture(device_stream stream, capture_mode mode) override {
    const device_scope scope(stream.device);
    check(cudaStreamBeginCapture(native(stream), to_cuda(mode)), "cudaStreamBeginCapture",
          [&] { return describe(stream); });
  }

  graph_handle end_capture(device_stream stream) override {
    const device_scope scope(stream.device);
    cudaGraph_t graph = nullptr;
    check(cudaStreamEndCapture(native(stream), &graph), "cudaStreamEndCapture",
          [&] { return describe(stream); });
    return to_handle<graph_handle>(graph);
  }

  bool is_capturing(device_stream stream) override {
    const device_scope scope(stream.device);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(native(stream), &status), "cudaStreamIsCapturing",
          [&] { return describe(stream); });
    return status == cudaStreamCaptureStatusActive;
  }

  graph_exec_handle instantiate(graph_handle graph) override {
    cudaGraphExec_t exec = nullptr;
    check(cudaGraphInstantiate(&exec, native(graph), 0), "cudaGraphInstantiate",
          [&] { return "graph " + describe_pointer(native(graph)); });
    return to_handle<graph_exec_handle>(exec);
  }

  void launch_graph(graph_exec_handle exec, device_stream stream) override {
    const device_scope scope(stream.device);
    check(cudaGraphLaunch(native(exec), native(stream)), "cudaGraphLaunch", [&] {
      return "executable graph " + describe_pointer(native(exec)) + " on " + describe(stream);
    });
  }

  void destroy_graph(graph_handle graph) override {
    check(cudaGraphDestroy(native(graph)), "cudaGraphDestroy",
          [&] { return "graph " + describe_pointer(native(graph)); });
  }

  void destroy_graph_exec(graph_exec_handle exec) override {
    check(cudaGraphExecDestroy(native(exec)), "cudaGraphExecDestroy",
          [&] { return "executable graph " + describe_pointer(native(exec)); });
  }

  // ---- annotations ----
  // NVTX wants NUL-terminated text; annotations are rare enough for a copy.

  void nvtx_push(std::string_view message) override {
    nvtxRangePushA(std::string(message).c_str());
  }
  void nvtx_pop() override { nvtxRangePop(); }
  void nvtx_mark(std::string_view message) override { nvtxMarkA(std::string(message).c_str()); }

 private:
  static cudaStreamCaptureMode to_cuda(capture_mode mode) noexcept {
    switch (mode) {
      case capture_mode::global: return cudaStreamCaptureModeGlobal;
      case capture_mode::thread_local_: return cudaStreamCaptureModeThreadLocal;
      case capture_mode::relaxed: return cudaStreamCaptureModeRelaxed;
    }
    return cudaStreamCaptureModeGlobal;
  }
};

}  // namespace

}  // namespace cuda

std::unique_ptr<backend> make_cuda_backend() { return std::make_unique<cuda::cuda_backend>(); }

bool cuda_device_present() noexcept {
  // Without a driver (or without a GPU) cudart reports an error here, e.g.
  // cudaErrorInsufficientDriver or cudaErrorNoDevice; that is "no device".
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return count > 0;
}

}  // namespace streamsan::rt
