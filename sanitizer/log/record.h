// The access log: one record for everything the runtime or the injection
// library observes. Producers build records and hand them to a record_sink
// (the live engine, a trace file writer, or both).
//
// Note [Records are views]
// Variable-length payloads (strings, stacks, access lists, graph nodes) are
// spans and string_views into storage owned by whoever produced the record,
// valid only for the duration of record_sink::on_record. A sink that needs
// the data later copies it. This keeps the hot path (a kernel launch with a
// handful of accesses) free of heap allocation on both sides.
//
// Note [Strings and stacks are interned]
// Kernel names, labels, NVTX messages and call stacks repeat endlessly, so a
// record carries a string_id / stack_id. The first time an id is used the
// producer emits a string_define / stack_define record before the record that
// uses it. A log is therefore self-describing: a consumer that sees records
// in order can always resolve every id it meets.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <variant>

#include "sanitizer/log/ids.h"

namespace streamsan {

// Bumped whenever the meaning or encoding of a record changes.
// 3: kernel_launch.cooperative; 4: graph memory nodes (graph_node.memory).
inline constexpr std::uint32_t access_log_version = 4;

enum class memory_kind : std::uint8_t {
  device,          // cudaMalloc, cuMemAlloc, pitch allocations
  pinned_host,     // cudaMallocHost / cudaHostAlloc / cudaHostRegister
  pageable_host,   // ordinary host memory (malloc, stack, ...)
  managed,         // cudaMallocManaged
  stream_ordered,  // cudaMallocAsync / cudaMallocFromPoolAsync
  cached_block,    // a block a caching allocator carved out of a parent segment
};

// Which kinds live on a device: device, managed (S-MEM-6: also
// host-accessible), stream-ordered and cached blocks; pinned and pageable
// host memory do not. The one table the engine, the runtime and both
// backends apply CUDA's copy rules (S-COPY-*) through.
constexpr bool is_device_memory(memory_kind kind) noexcept {
  switch (kind) {
    case memory_kind::device:
    case memory_kind::managed:
    case memory_kind::stream_ordered:
    case memory_kind::cached_block:
      return true;
    case memory_kind::pinned_host:
    case memory_kind::pageable_host:
      return false;
  }
  return false;
}

// Which kinds the host can touch: pinned and pageable host memory, and
// managed memory (S-MEM-6). What the ThreadSanitizer bridge tells TSan
// about, and what a launch the host may race with points into (Note [First
// launches are measured once work can overlap]). A block of an unknown
// segment is device memory.
constexpr bool host_accessible(memory_kind kind) noexcept {
  switch (kind) {
    case memory_kind::pinned_host:
    case memory_kind::pageable_host:
    case memory_kind::managed:
      return true;
    case memory_kind::device:
    case memory_kind::stream_ordered:
    case memory_kind::cached_block:
      return false;
  }
  return false;
}

// A bit set: plain read, plain write, atomic. An atomic (a device atomic
// read-modify-write) is its own kind because two atomics never race with
// each other, while an atomic and a plain access of the same bytes do
// (Note [Atomics are their own access kind]).
enum class access_mode : std::uint8_t {
  read = 1,
  write = 2,
  read_write = 3,
  atomic = 4,
  read_atomic = 5,
  write_atomic = 6,
  read_write_atomic = 7,
};

constexpr bool reads(access_mode m) noexcept {
  return (static_cast<unsigned>(m) & 1u) != 0;
}
constexpr bool writes(access_mode m) noexcept {
  return (static_cast<unsigned>(m) & 2u) != 0;
}
constexpr bool is_atomic(access_mode m) noexcept {
  return (static_cast<unsigned>(m) & 4u) != 0;
}
constexpr access_mode operator|(access_mode a, access_mode b) noexcept {
  return static_cast<access_mode>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}

// Note [Atomics are their own access kind]
// Two unordered accesses of the same bytes race unless both only read or
// both are atomic. A plain read against an atomic races (the C++ and PTX
// memory models make a non-atomic access concurrent with an atomic write a
// data race); two atomics, whatever they do, do not.
constexpr bool conflicts(access_mode a, access_mode b) noexcept {
  const bool a_plain = reads(a) || writes(a);
  const bool b_plain = reads(b) || writes(b);
  if (writes(a) && (b_plain || is_atomic(b))) return true;
  if (writes(b) && (a_plain || is_atomic(a))) return true;
  return (is_atomic(a) && b_plain) || (is_atomic(b) && a_plain);
}

// Where an access's extent comes from. Only `exact` and `measured`
// footprints are promises; a conflict that needs an `inferred` one is a
// candidate until a measurement confirms it (docs/engine.md).
enum class access_origin : std::uint8_t {
  // The API call's own extent (copies, memsets), an access declared to the
  // runtime API, or an annotation (include/streamsan/annotate.h).
  exact = 0,
  // Measured by instrumenting the kernel's global-memory instructions.
  measured = 1,
  // Guessed from the kernel's parameters (each pointer to the end of its
  // allocation).
  inferred = 2,
};

// A byte range inside one allocation. alloc == none marks memory streamsan
// does not track (e.g. a pageable host buffer it never saw allocated).
struct byte_range {
  alloc_id alloc{};
  std::uint64_t offset = 0;
  std::uint64_t size = 0;

  friend bool operator==(const byte_range&, const byte_range&) = default;
};

struct access {
  byte_range range;
  access_mode mode = access_mode::read;
  access_origin origin = access_origin::exact;

  friend bool operator==(const access&, const access&) = default;
};

enum class stream_flavor : std::uint8_t {
  blocking,            // cudaStreamDefault flag: syncs with the legacy stream
  non_blocking,        // cudaStreamNonBlocking (S-DEFAULT-2)
  legacy_default,      // stream 0 / cudaStreamLegacy (S-DEFAULT-1)
  per_thread_default,  // cudaStreamPerThread (S-DEFAULT-3)
};

// Event creation flags (S-EVENT-5, S-EVENT-7). Only ordering matters to the
// engine; the flags are kept for reports and for elapsed-time checks.
enum event_flags : std::uint32_t {
  event_flag_none = 0,
  event_flag_timing = 1u << 0,
  event_flag_blocking_sync = 1u << 1,
  event_flag_interprocess = 1u << 2,
};

enum class free_mode : std::uint8_t {
  // cudaFree / cuMemFree: synchronizes the device first (S-MEM-5).
  synchronizing,
  // cudaFreeHost and other frees the documentation does not promise to
  // synchronize: the host must already be ordered after every use.
  unsynchronized,
  // cudaFreeAsync: ordered on free_record::stream (S-MEM-5).
  stream_ordered,
  // A caching allocator took the block back into its cache. The memory stays
  // mapped; later reuse is checked through the parent segment's history.
  cached,
};

enum class graph_node_kind : std::uint8_t {
  kernel,
  memcpy,
  memset,
  host_func,
  empty,
  event_record,
  event_wait,
  other,
  // Graph memory nodes (Note [Graph allocations], sanitizer/engine/graph_rules.cpp):
  // graph_node::memory names the allocation the node makes or frees.
  mem_alloc,
  mem_free,
};

// ---- definitions (see Note [Strings and stacks are interned]) ----

struct string_define {
  string_id id{};
  std::string_view text;
};

// Raw return addresses, innermost first. Symbolized only when printed.
struct stack_define {
  stack_id id{};
  std::span<const std::uint64_t> frames;
};

// Symbol information for one return address, appended by a trace writer when
// it closes so that a trace can be symbolized in another process.
struct frame_symbol {
  std::uint64_t address = 0;
  std::string_view function;
  std::string_view file;
  std::uint32_t line = 0;
  // The loaded module (executable or shared library) that holds the address
  // and the address's offset in it, so a frame without debug information can
  // still be located (addr2line -e MODULE OFFSET). Empty / 0 when unknown.
  std::string_view module;
  std::uint64_t module_offset = 0;
};

struct thread_start {
  string_id name{};
};

// The issuing host thread ended: its clock slot may be retired once every
// live clock covers it. No record of this thread follows.
struct thread_exit {};

// ---- streams ----

struct stream_create {
  stream_id stream{};
  std::int32_t device = 0;
  stream_flavor flavor = stream_flavor::blocking;
  std::int32_t priority = 0;
};

struct stream_destroy {
  stream_id stream{};
};

struct stream_synchronize {
  stream_id stream{};
};

struct stream_query {
  stream_id stream{};
  bool complete = false;
};

// torch's Stream.wait_stream (S-STREAM-6).
struct stream_wait_stream {
  stream_id waiter{};
  stream_id waited{};
};

struct device_synchronize {
  std::int32_t device = 0;
};

// ---- events ----

struct event_create {
  event_id event{};
  std::uint32_t flags = event_flag_none;
};

struct event_destroy {
  event_id event{};
};

struct event_record {
  event_id event{};
  stream_id stream{};
};

struct event_wait {
  event_id event{};
  stream_id stream{};
};

struct event_synchronize {
  event_id event{};
};

struct event_query {
  event_id event{};
  bool complete = false;
};

// ---- memory ----

struct alloc_record {
  alloc_id alloc{};
  memory_kind kind = memory_kind::device;
  std::int32_t device = 0;
  std::uint64_t size = 0;
  std::uint64_t address = 0;  // for reports only; never used as a key
  // stream_ordered: the allocating stream. cached_block: the stream the block
  // is cached for.
  stream_id stream{};
  // cached_block: the segment it lives in and where.
  alloc_id parent{};
  std::uint64_t parent_offset = 0;
  string_id label{};
};

struct free_record {
  alloc_id alloc{};
  free_mode mode = free_mode::synchronizing;
  stream_id stream{};  // stream_ordered only
};

struct memcpy_record {
  stream_id stream{};
  byte_range src;
  byte_range dst;
  memory_kind src_kind = memory_kind::device;
  memory_kind dst_kind = memory_kind::device;
  bool async = false;
};

struct memset_record {
  stream_id stream{};
  byte_range dst;
  memory_kind dst_kind = memory_kind::device;
  bool async = false;
};

// ---- work ----

struct kernel_launch {
  stream_id stream{};
  string_id kernel{};
  std::span<const access> accesses;
  // A cooperative launch (cudaLaunchCooperativeKernel, or the cooperative
  // launch attribute): all its blocks are resident at once, so it may wait
  // on the device for another kernel (Note [Kernels that synchronize on the
  // device], sanitizer/engine).
  bool cooperative = false;
};

struct host_func {
  stream_id stream{};
  string_id name{};
  std::span<const access> accesses;
};

// The host thread touches memory (annotation, or the host side of a copy).
struct host_access {
  std::span<const access> accesses;
  string_id what{};  // e.g. "host read", an annotation's label
};

// ---- graphs ----

struct graph_capture_begin {
  stream_id stream{};
  graph_id graph{};
};

struct graph_capture_end {
  stream_id stream{};
  graph_id graph{};
};

struct graph_node {
  graph_node_kind kind = graph_node_kind::kernel;
  string_id name{};
  std::span<const access> accesses;
  // Where the node was added (cudaGraphAdd*Node) or captured (the call on
  // the capturing stream); none when unknown.
  stack_id stack{};
  // mem_alloc, mem_free: the allocation made or freed; none otherwise.
  alloc_id memory{};
};

struct graph_edge {
  std::uint32_t from = 0;  // index into graph_instantiate::nodes
  std::uint32_t to = 0;
};

// An executable graph and its dependency structure (S-GRAPH-2).
struct graph_instantiate {
  graph_id graph{};
  std::span<const graph_node> nodes;
  std::span<const graph_edge> edges;
};

struct graph_launch {
  graph_id graph{};
  stream_id stream{};
};

// ---- annotations ----

struct nvtx_push {
  string_id message{};
};

struct nvtx_pop {};

struct nvtx_mark {
  string_id message{};
};

// A CUDA API call the producer saw but does not model. Never silently
// dropped: the engine counts these and the report lists them.
struct unmodelled_call {
  string_id api{};
};

using record_body = std::variant<
    string_define, stack_define, frame_symbol, thread_start,           //
    stream_create, stream_destroy, stream_synchronize, stream_query,   //
    stream_wait_stream, device_synchronize,                            //
    event_create, event_destroy, event_record, event_wait,             //
    event_synchronize, event_query,                                    //
    alloc_record, free_record, memcpy_record, memset_record,           //
    kernel_launch, host_func, host_access,                             //
    graph_capture_begin, graph_capture_end, graph_instantiate,         //
    graph_launch, nvtx_push, nvtx_pop, nvtx_mark, unmodelled_call,     //
    thread_exit>;

struct record_header {
  std::uint64_t seq = 0;  // strictly increasing within one log
  thread_id thread{};     // issuing host thread
  stack_id stack{};       // none when stacks are off
};

struct record {
  record_header header;
  record_body body;
};

// Anything that consumes the access log.
class record_sink {
 public:
  virtual ~record_sink() = default;
  virtual void on_record(const record& r) = 0;
};

}  // namespace streamsan
