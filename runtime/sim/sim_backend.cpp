// The simulated device: the backend interface on host memory with a seeded
// scheduler (runtime/sim/scheduler.h). See docs/runtime.md, "The sim backend".
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/backend/backend.h"
#include "sanitizer/log/copy_synchronization.h"
#include "runtime/capture/capture_builder.h"
#include "runtime/sim/scheduler.h"
#include "runtime/sim/sim_kernels.h"
#include "runtime/sim/sim_memory.h"

namespace streamsan::rt {
namespace sim {
namespace {

// Nanoseconds an operation without a better estimate takes.
constexpr std::uint64_t small_op_ns = 1000;

std::uint64_t copy_duration_ns(std::uint64_t bytes) { return small_op_ns + bytes / 10; }

enum class stream_kind : std::uint8_t { legacy, per_thread, created };

struct sim_node {
  std::function<void()> action;
  std::uint64_t duration_ns = 0;
};

using builder = capture_builder<std::uint64_t, std::uint64_t, sim_node>;

struct sim_stream {
  int device = 0;
  stream_kind kind = stream_kind::created;
  bool non_blocking = false;
  op_id tail = 0;  // the last op enqueued
  bool destroyed = false;
  builder* capture = nullptr;  // the capture this stream takes part in

  // Blocking streams synchronize with the legacy stream (S-DEFAULT-1..3).
  bool blocking() const noexcept {
    switch (kind) {
      case stream_kind::legacy: return false;
      case stream_kind::per_thread: return true;
      case stream_kind::created: return !non_blocking;
    }
    return false;
  }
};

struct sim_event {
  int device = 0;
  std::uint32_t flags = 0;
  op_id op = 0;                 // the op of the latest record; 0 = never recorded
  std::uint64_t generation = 0;  // bumped by every record
  std::optional<std::uint64_t> time_ns;  // when the latest record ran
  builder* capture = nullptr;   // the latest record was captured here
  bool destroyed = false;
};

struct sim_graph {
  std::vector<sim_node> nodes;
  std::vector<capture_edge> edges;
};

class sim_backend final : public backend {
 public:
  explicit sim_backend(sim_options options)
      : options_(options),
        scheduler_(options, options.device_count),
        memory_(options.device_count, options.memory_per_device, options.quarantine_bytes) {
    if (options.device_count < 1) {
      throw cuda_error(error_code::invalid_value, "make_sim_backend",
                       "sim_options::device_count must be at least 1");
    }
    for (int d = 0; d < options.device_count; ++d) {
      sim_stream s;
      s.device = d;
      s.kind = stream_kind::legacy;
      streams_.push_back(s);  // handle d = legacy stream of device d
    }
  }

  std::string_view name() const noexcept override { return "sim"; }

  // ---- devices ----

  int device_count() override { return options_.device_count; }

  device_properties properties(int device) override {
    check_device(device, "cudaGetDeviceProperties");
    device_properties p;
    p.name = "streamsan sim device " + std::to_string(device);
    p.major = 9;
    p.minor = 0;
    p.total_memory = options_.memory_per_device;
    p.multi_processor_count = 132;
    p.concurrent_managed_access = true;
    return p;
  }

  memory_info mem_get_info(int device) override {
    std::lock_guard lock(mutex_);
    check_device(device, "cudaMemGetInfo");
    return {memory_.total() - memory_.used(device), memory_.total()};
  }

  bool can_access_peer(int device, int peer) override {
    check_device(device, "cudaDeviceCanAccessPeer");
    check_device(peer, "cudaDeviceCanAccessPeer");
    return device != peer && options_.peer_access;
  }

  void synchronize_device(int device) override {
    std::lock_guard lock(mutex_);
    check_device(device, "cudaDeviceSynchronize");
    scheduler_.run_until([&] { return scheduler_.device_idle(device); }, "cudaDeviceSynchronize");
  }

  // ---- streams ----

  stream_handle create_stream(int device, bool non_blocking, int) override {
    std::lock_guard lock(mutex_);
    check_device(device, "cudaStreamCreateWithPriority");
    sim_stream s;
    s.device = device;
    s.non_blocking = non_blocking;
    streams_.push_back(s);
    scheduler_.progress();
    return stream_handle{streams_.size() - 1};
  }

  void destroy_stream(device_stream stream) override {
    std::lock_guard lock(mutex_);
    auto& s = lookup(stream, "cudaStreamDestroy");
    if (s.kind != stream_kind::created) {
      throw cuda_error(error_code::invalid_resource_handle, "cudaStreamDestroy",
                       "a default stream cannot be destroyed");
    }
    s.destroyed = true;  // pending work still completes (S-STREAM-9)
    scheduler_.progress();
  }

  priority_range stream_priority_range(int device) override {
    check_device(device, "cudaDeviceGetStreamPriorityRange");
    return {0, -5};
  }

  stream_handle legacy_default_stream(int device) override {
    check_device(device, "cudaStreamLegacy");
    return stream_handle{static_cast<std::uint64_t>(device)};
  }

  stream_handle per_thread_default_stream(int device) override {
    std::lock_guard lock(mutex_);
    check_device(device, "cudaStreamPerThread");
    const auto key = std::pair{std::this_thread::get_id(), device};
    if (const auto it = per_thread_.find(key); it != per_thread_.end()) {
      return stream_handle{it->second};
    }
    sim_stream s;
    s.device = device;
    s.kind = stream_kind::per_thread;
    streams_.push_back(s);
    per_thread_.emplace(key, streams_.size() - 1);
    return stream_handle{streams_.size() - 1};
  }

  bool query_stream(device_stream stream) override {
    std::lock_guard lock(mutex_);
    scheduler_.progress();
    return answer(scheduler_.done(lookup(stream, "cudaStreamQuery").tail));
  }

  void synchronize_stream(device_stream stream) override {
    std::lock_guard lock(mutex_);
    wait_for(lookup(stream, "cudaStreamSynchronize").tail, "cudaStreamSynchronize");
  }

  void stream_wait_event(device_stream stream, event_handle event) override {
    std::lock_guard lock(mutex_);
    auto& s = lookup(stream, "cudaStreamWaitEvent");
    auto& e = lookup(event, "cudaStreamWaitEvent");
    const auto index = raw(stream.handle);
    if (e.capture != nullptr) {
      // Joining a capture (see Note [How a capture becomes a graph]).
      e.capture->wait_event(index, raw(event));
      s.capture = e.capture;
      return;
    }
    if (e.op == 0) return;  // never recorded: orders nothing (S-EVENT-3)
    if (s.capture != nullptr) return;  // an external dependency; the graph ignores it
    const op_id deps[] = {e.op};
    enqueue_on(index, {}, 0, deps);
    scheduler_.progress();
  }

  // ---- events ----

  event_handle create_event(int device, std::uint32_t flags) override {
    std::lock_guard lock(mutex_);
    check_device(device, "cudaEventCreateWithFlags");
    sim_event e;
    e.device = device;
    e.flags = flags;
    events_.push_back(e);
    return event_handle{events_.size() - 1};
  }

  void destroy_event(event_handle event) override {
    std::lock_guard lock(mutex_);
    auto& e = lookup(event, "cudaEventDestroy");
    if (e.capture != nullptr) e.capture->forget_event(raw(event));
    e.capture = nullptr;
    e.destroyed = true;
  }

  void record_event(event_handle event, device_stream stream) override {
    std::lock_guard lock(mutex_);
    auto& s = lookup(stream, "cudaEventRecord");
    auto& e = lookup(event, "cudaEventRecord");
    const auto index = raw(event);
    if (e.capture != nullptr) e.capture->forget_event(index);
    e.capture = nullptr;
    if (s.capture != nullptr) {
      s.capture->record_event(raw(stream.handle), index);
      e.capture = s.capture;
      return;
    }
    const auto generation = ++e.generation;
    e.time_ns.reset();
    e.op = enqueue_on(
        raw(stream.handle),
        [this, index, generation] {
          auto& target = events_[index];
          if (target.generation == generation) target.time_ns = scheduler_.now_ns();
        },
        0);
    scheduler_.progress();
  }

  bool query_event(event_handle event) override {
    std::lock_guard lock(mutex_);
    scheduler_.progress();
    return answer(scheduler_.done(lookup(event, "cudaEventQuery").op));
  }

  void synchronize_event(event_handle event) override {
    std::lock_guard lock(mutex_);
    wait_for(lookup(event, "cudaEventSynchronize").op, "cudaEventSynchronize");
  }

  float elapsed_time(event_handle start, event_handle end) override {
    std::lock_guard lock(mutex_);
    const auto& a = lookup(start, "cudaEventElapsedTime");
    const auto& b = lookup(end, "cudaEventElapsedTime");
    if ((a.flags & event_flag_timing) == 0 || (b.flags & event_flag_timing) == 0) {
      throw cuda_error(error_code::invalid_resource_handle, "cudaEventElapsedTime",
                       "an event was created without timing");
    }
    if (!a.time_ns || !b.time_ns) {
      throw cuda_error(error_code::not_ready, "cudaEventElapsedTime",
                       "an event has not been recorded or has not completed");
    }
    const double ns =
        static_cast<double>(*b.time_ns) - static_cast<double>(*a.time_ns);
    return static_cast<float>(ns / 1e6);
  }

  // ---- memory ----

  void* allocate(memory_kind kind, int device, std::uint64_t bytes, device_stream stream) override {
    std::lock_guard lock(mutex_);
    check_device(device, "cudaMalloc");
    if (kind == memory_kind::cached_block) {
      throw cuda_error(error_code::invalid_value, "cudaMalloc",
                       "cached blocks come from the caching allocator, not the backend");
    }
    if (kind == memory_kind::stream_ordered) lookup(stream, "cudaMallocAsync");
    void* ptr = memory_.allocate(kind, device, bytes);
    scheduler_.progress();
    return ptr;
  }

  void deallocate(memory_kind kind, int device, void* ptr, device_stream stream) override {
    std::lock_guard lock(mutex_);
    switch (kind) {
      case memory_kind::device:
      case memory_kind::managed:
      case memory_kind::cached_block:
        // cudaFree synchronizes the device first (S-MEM-5).
        scheduler_.run_until([&] { return scheduler_.device_idle(device); }, "cudaFree");
        memory_.release(ptr, "cudaFree");
        break;
      case memory_kind::pinned_host:
        memory_.release(ptr, "cudaFreeHost");
        break;
      case memory_kind::pageable_host:
        memory_.release(ptr, "free");
        break;
      case memory_kind::stream_ordered:
        lookup(stream, "cudaFreeAsync");
        submit(raw(stream.handle), {[this, ptr] { memory_.release(ptr, "cudaFreeAsync"); }, small_op_ns});
        break;
    }
    scheduler_.progress();
  }

  void memcpy(const copy_request& r) override {
    std::lock_guard lock(mutex_);
    const char* call = r.async ? "cudaMemcpyAsync" : "cudaMemcpy";
    const auto s = raw(r.stream.handle);
    lookup(r.stream, call);
    const auto duration = copy_duration_ns(r.bytes);
    void* dst = r.dst;
    const void* src = r.src;
    const auto bytes = r.bytes;
    if (copy_stages_source(r.async, r.src_kind, r.dst_kind)) {
      // S-COPY-1: synchronize the stream (its own prior work, not the
      // blocking streams the copy will wait for), stage the source, return;
      // the write to the device happens later.
      wait_for(streams_[s].tail, call);
      auto staged = std::make_shared<std::vector<unsigned char>>(
          static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(src) + bytes);
      submit(s, {[dst, staged] { std::memcpy(dst, staged->data(), staged->size()); }, duration});
      scheduler_.progress();
      return;
    }
    const auto op = submit(s, {[dst, src, bytes] { std::memmove(dst, src, bytes); }, duration});
    // The op follows the stream's prior work and, on the legacy stream, every
    // blocking stream's (S-DEFAULT-1); waiting for it waits for those too.
    if (copy_completes_before_return(r.async, r.src_kind, r.dst_kind) && op) wait_for(*op, call);
    scheduler_.progress();
  }

  void memset(const memset_request& r) override {
    std::lock_guard lock(mutex_);
    const char* call = r.async ? "cudaMemsetAsync" : "cudaMemset";
    const auto s = raw(r.stream.handle);
    lookup(r.stream, call);
    void* dst = r.dst;
    const auto value = r.value;
    const auto bytes = r.bytes;
    const auto op = submit(s, {[dst, value, bytes] { std::memset(dst, value, bytes); },
                               copy_duration_ns(bytes)});
    // S-COPY-4: synchronous into pinned host memory and managed memory.
    if (memset_completes_before_return(r.async, r.dst_kind) && op) wait_for(*op, call);
    scheduler_.progress();
  }

  // ---- work ----

  void launch_kernel(device_stream stream, const kernel_args& args) override {
    std::lock_guard lock(mutex_);
    lookup(stream, "cudaLaunchKernel");
    submit(raw(stream.handle), {[args] { run_kernel(args); }, kernel_duration_ns(args)});
    scheduler_.progress();
  }

  void launch_host_func(device_stream stream, host_function fn) override {
    std::lock_guard lock(mutex_);
    lookup(stream, "cudaLaunchHostFunc");
    submit(raw(stream.handle), {std::move(fn), small_op_ns});
    scheduler_.progress();
  }

  // ---- graphs ----

  void begin_capture(device_stream stream, capture_mode) override {
    std::lock_guard lock(mutex_);
    auto& s = lookup(stream, "cudaStreamBeginCapture");
    if (s.capture != nullptr) {
      throw cuda_error(error_code::invalid_value, "cudaStreamBeginCapture",
                       "the stream is already capturing");
    }
    if (s.kind == stream_kind::legacy) {
      throw cuda_error(error_code::capture_unsupported, "cudaStreamBeginCapture",
                       "the legacy default stream cannot capture");
    }
    const auto index = raw(stream.handle);
    auto [it, inserted] = captures_.emplace(index, std::make_unique<builder>(index));
    s.capture = it->second.get();
  }

  graph_handle end_capture(device_stream stream) override {
    std::lock_guard lock(mutex_);
    auto& s = lookup(stream, "cudaStreamEndCapture");
    const auto index = raw(stream.handle);
    if (s.capture == nullptr || s.capture->origin() != index) {
      throw cuda_error(error_code::invalid_value, "cudaStreamEndCapture",
                       "the stream is not the origin of a capture");
    }
    builder* b = s.capture;
    const auto unjoined = b->unjoined();
    sim_graph g{b->nodes(), b->edges()};
    for (const auto member : b->streams()) streams_[member].capture = nullptr;
    for (auto& e : events_) {
      if (e.capture == b) e.capture = nullptr;
    }
    captures_.erase(index);
    if (unjoined) {
      throw cuda_error(error_code::capture_unjoined, "cudaStreamEndCapture",
                       "a stream that joined the capture was not joined back into the origin "
                       "stream");
    }
    graphs_.emplace_back(std::move(g));
    return graph_handle{graphs_.size() - 1};
  }

  bool is_capturing(device_stream stream) override {
    std::lock_guard lock(mutex_);
    return lookup(stream, "cudaStreamIsCapturing").capture != nullptr;
  }

  graph_exec_handle instantiate(graph_handle graph) override {
    std::lock_guard lock(mutex_);
    execs_.push_back(lookup(graphs_, raw(graph), "cudaGraphInstantiate"));
    return graph_exec_handle{execs_.size() - 1};
  }

  void launch_graph(graph_exec_handle exec, device_stream stream) override {
    std::lock_guard lock(mutex_);
    const auto& g = lookup(execs_, raw(exec), "cudaGraphLaunch");
    auto& s = lookup(stream, "cudaGraphLaunch");
    if (s.capture != nullptr) {
      throw cuda_error(error_code::not_supported, "cudaGraphLaunch",
                       "the sim does not capture graph launches");
    }
    // Roots follow the stream's prior work; the stream's later work follows
    // every node (S-GRAPH-2).
    auto base = stream_deps(s);
    std::vector<op_id> ids(g.nodes.size(), 0);
    std::vector<std::vector<op_id>> preds(g.nodes.size());
    for (const auto& e : g.edges) preds[e.to].push_back(e.from);
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
      std::vector<op_id> deps;
      for (const auto p : preds[i]) deps.push_back(ids[p]);  // edges go forward
      if (deps.empty()) deps = base;
      ids[i] = scheduler_.enqueue(s.device, deps, g.nodes[i].action, g.nodes[i].duration_ns);
    }
    ids.insert(ids.end(), base.begin(), base.end());
    s.tail = scheduler_.enqueue(s.device, ids, {}, 0);
    scheduler_.progress();
  }

  void destroy_graph(graph_handle graph) override {
    std::lock_guard lock(mutex_);
    lookup(graphs_, raw(graph), "cudaGraphDestroy");
    graphs_[raw(graph)].reset();
  }

  void destroy_graph_exec(graph_exec_handle exec) override {
    std::lock_guard lock(mutex_);
    lookup(execs_, raw(exec), "cudaGraphExecDestroy");
    execs_[raw(exec)].reset();
  }

  // ---- annotations: nothing to do on the sim ----

  void nvtx_push(std::string_view) override {}
  void nvtx_pop() override {}
  void nvtx_mark(std::string_view) override {}

 private:
  template <class Handle>
  static std::uint64_t raw(Handle h) noexcept {
    return static_cast<std::uint64_t>(h);
  }

  void check_device(int device, std::string_view call) const {
    if (device < 0 || device >= options_.device_count) {
      throw cuda_error(error_code::invalid_device, call,
                       "device " + std::to_string(device) + " does not exist (the sim has " +
                           std::to_string(options_.device_count) + ")");
    }
  }

  // A query's answer; "not complete" lets the device advance (see
  // Note [The sim scheduler]).
  bool answer(bool complete) {
    if (!complete) scheduler_.poll();
    return complete;
  }

  // The host blocks until op `id` completed.
  void wait_for(op_id id, std::string_view call) {
    scheduler_.run_until([&] { return scheduler_.done(id); }, call);
  }

  sim_stream& lookup(device_stream stream, std::string_view call) {
    const auto index = raw(stream.handle);
    if (index >= streams_.size() || streams_[index].destroyed) {
      throw cuda_error(error_code::invalid_resource_handle, call,
                       "not a live stream of the simulated device");
    }
    return streams_[index];
  }

  sim_event& lookup(event_handle event, std::string_view call) {
    const auto index = raw(event);
    if (index >= events_.size() || events_[index].destroyed) {
      throw cuda_error(error_code::invalid_resource_handle, call,
                       "not a live event of the simulated device");
    }
    return events_[index];
  }

  static const sim_graph& lookup(const std::vector<std::optional<sim_graph>>& table,
                                 std::uint64_t index, std::string_view call) {
    if (index >= table.size() || !table[index]) {
      throw cuda_error(error_code::invalid_resource_handle, call, "not a live graph");
    }
    return *table[index];
  }

  // What the next op on `s` must follow: its previous op and the legacy
  // stream's implicit synchronization (S-DEFAULT-1..3).
  std::vector<op_id> stream_deps(const sim_stream& s) const {
    std::vector<op_id> deps{s.tail};
    if (s.kind == stream_kind::legacy) {
      for (const auto& other : streams_) {
        if (other.device == s.device && other.blocking()) deps.push_back(other.tail);
      }
    } else if (s.blocking()) {
      deps.push_back(streams_[static_cast<std::size_t>(s.device)].tail);
    }
    return deps;
  }

  op_id enqueue_on(std::uint64_t index, std::function<void()> action, std::uint64_t duration_ns,
                   std::span<const op_id> extra = {}) {
    auto deps = stream_deps(streams_[index]);
    deps.insert(deps.end(), extra.begin(), extra.end());
    const op_id id =
        scheduler_.enqueue(streams_[index].device, deps, std::move(action), duration_ns);
    streams_[index].tail = id;
    return id;
  }

  // Runs `node` on stream `index`, or records it when the stream captures.
  std::optional<op_id> submit(std::uint64_t index, sim_node node) {
    if (auto* capture = streams_[index].capture) {
      capture->add_node(index, std::move(node));
      return std::nullopt;
    }
    return enqueue_on(index, std::move(node.action), node.duration_ns);
  }

  std::mutex mutex_;
  sim_options options_;
  scheduler scheduler_;
  sim_memory memory_;
  std::vector<sim_stream> streams_;  // handle = index; 0..device_count-1 are legacy
  std::vector<sim_event> events_;    // handle = index
  std::map<std::pair<std::thread::id, int>, std::uint64_t> per_thread_;
  std::map<std::uint64_t, std::unique_ptr<builder>> captures_;  // by origin stream
  std::vector<std::optional<sim_graph>> graphs_;
  std::vector<std::optional<sim_graph>> execs_;
};

}  // namespace
}  // namespace sim

std::unique_ptr<backend> make_sim_backend(sim_options options) {
  return std::make_unique<sim::sim_backend>(options);
}

}  // namespace streamsan::rt
