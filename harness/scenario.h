// A scenario: declared objects, an ordered list of operations and what must
// be observed when they are replayed. docs/scenarios.md is the reference for
// the YAML form; scenario_parser.h builds these from it.
//
// Note [Elements are floats]
// Every buffer holds 32-bit floats: the kernel library (fill, copy, scale,
// axpy, reduce_sum) computes on floats, so contents can be written and
// compared as plain numbers. Sizes and ranges in scenarios count elements;
// allocator statistics are in bytes (4 per element, plus the allocator's
// rounding).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "harness/expectation.h"
#include "harness/kernel_catalog.h"
#include "harness/scenario_place.h"
#include "harness/source_mark.h"

namespace streamsan::harness {

inline constexpr std::uint64_t element_bytes = 4;

// ---- declarations ----

struct rule_citation {
  std::string id;    // "S-EVENT-1"
  std::string text;  // the rule's words, quoted in the scenario
  source_mark where;
};

enum class stream_flag : std::uint8_t { blocking, non_blocking };

// The two streams every device has without declaring them.
inline constexpr std::string_view legacy_stream_name = "default";
inline constexpr std::string_view per_thread_stream_name = "per_thread";

struct stream_decl {
  std::string name;
  int device = 0;
  stream_flag flag = stream_flag::blocking;
  int priority = 0;
  source_mark where;
};

// An event gets its device at its first record (S-EVENT-6).
struct event_decl {
  std::string name;
  bool timing = false;
  bool blocking_sync = false;
  bool interprocess = false;
  source_mark where;
};

enum class buffer_kind : std::uint8_t {
  device,          // cudaMalloc
  pinned,          // cudaMallocHost
  pageable,        // malloc
  managed,         // cudaMallocManaged
  stream_ordered,  // cudaMallocAsync on `stream`
  cached,          // the caching allocator, for `stream`
};

std::string_view to_string(buffer_kind kind) noexcept;

struct buffer_decl {
  std::string name;
  buffer_kind kind = buffer_kind::device;
  int device = 0;
  std::uint64_t size = 0;  // elements (Note [Elements are floats])
  // Contents written before the first operation; empty = left as allocated.
  std::vector<float> fill;
  // stream_ordered / cached: the allocating stream ("" = current stream).
  std::string stream;
  // Allocated by an `alloc` operation rather than before the first one.
  bool deferred = false;
  source_mark where;
};

// `A` or `A[2:4]`: elements [begin, end) of a buffer.
struct buffer_slice {
  std::string buffer;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;  // exclusive; set to the buffer's size when omitted
};

std::string to_string(const buffer_slice& slice);

// ---- operations ----

struct launch_op {
  kernel_kind kernel = kernel_kind::fill;
  std::string stream;  // "" = current stream
  std::vector<buffer_slice> buffers;  // one per buffer parameter, catalog order
  std::vector<double> scalars;        // one per scalar parameter, catalog order
};

struct memcpy_op {
  buffer_slice dst;
  buffer_slice src;
  bool async = false;
  std::string stream;  // async only ("" = current stream)
};

struct memset_op {
  buffer_slice dst;
  int value = 0;  // the byte written
  bool async = false;
  std::string stream;
};

struct record_op {
  std::string event;
  std::string stream;
};

struct wait_op {  // stream waits event (S-EVENT-2)
  std::string stream;
  std::string event;
};

struct wait_stream_op {  // stream.wait_stream(other) (S-STREAM-6)
  std::string stream;
  std::string other;
};

enum class sync_target : std::uint8_t { device, stream, event };

struct synchronize_op {
  sync_target target = sync_target::device;
  std::string name;  // stream or event; "" for the device
  int device = -1;   // device target: -1 = current device
};

struct query_op {  // result: true / false
  sync_target target = sync_target::stream;  // never device
  std::string name;
  // Poll until the answer is true (a busy-wait loop, S-SYNC-2); the result
  // is then the last answer.
  bool until_true = false;
};

struct elapsed_time_op {  // result: milliseconds
  std::string start;
  std::string end;
};

struct destroy_op {
  sync_target target = sync_target::stream;  // never device
  std::string name;
};

struct alloc_op {
  std::string buffer;
};

struct free_op {
  std::string buffer;
  std::string stream;  // stream_ordered only: cudaFreeAsync's stream
};

struct record_stream_op {
  std::string buffer;
  std::string stream;
};

struct empty_cache_op {};

struct memory_fraction_op {
  double fraction = 1.0;
  int device = 0;
};

struct reset_peak_stats_op {};

struct memory_stats_op {};  // result: the allocator statistics

struct host_write_op {
  buffer_slice dst;
  std::vector<float> values;  // one per element, or one for all
};

struct host_read_op {  // result: the elements read
  buffer_slice src;
};

// cudaLaunchHostFunc: the function reads `reads` and writes `value` into
// every element of `writes` (host-accessible buffers only).
struct host_func_op {
  std::string stream;
  std::vector<buffer_slice> reads;
  std::vector<buffer_slice> writes;
  float value = 0;
};

struct capture_begin_op {
  std::string stream;
  std::string graph;
};

struct capture_end_op {
  std::string stream;
};

struct graph_launch_op {
  std::string graph;
  std::string stream;
};

// Guards are nested blocks in YAML; the parser flattens them into an
// enter / body / exit sequence so that replay is one linear walk.
struct device_guard_enter_op {
  int device = 0;
};
struct device_guard_exit_op {};
struct stream_guard_enter_op {
  std::string stream;
};
struct stream_guard_exit_op {};

struct set_device_op {
  int device = 0;
};

struct nvtx_push_op {
  std::string message;
};
struct nvtx_pop_op {};
struct nvtx_mark_op {
  std::string message;
};

enum class sync_debug_mode : std::uint8_t { off, warn, error };

struct sync_debug_mode_op {
  sync_debug_mode mode = sync_debug_mode::off;
};

using operation_body = std::variant<
    launch_op, memcpy_op, memset_op, record_op, wait_op, wait_stream_op,
    synchronize_op, query_op, elapsed_time_op, destroy_op, alloc_op, free_op,
    record_stream_op, empty_cache_op, memory_fraction_op, reset_peak_stats_op,
    memory_stats_op, host_write_op, host_read_op, host_func_op,
    capture_begin_op, capture_end_op, graph_launch_op, device_guard_enter_op,
    device_guard_exit_op, stream_guard_enter_op, stream_guard_exit_op,
    set_device_op, nvtx_push_op, nvtx_pop_op, nvtx_mark_op,
    sync_debug_mode_op>;

struct operation {
  std::string label;  // "" when the scenario gave none
  operation_body body;
  source_mark where;
};

// "'sum'" for a labelled operation, "the launch fill at line 23" otherwise.
std::string describe(const operation& op);
// "launch fill", "record", "synchronize stream", ...
std::string op_name(const operation_body& body);

// ---- the scenario ----

struct scenario_requirements {
  int devices = 1;                     // the backend must provide this many
  std::vector<std::string> backends;   // empty = every backend
};

// How the device runs the work.
struct scenario_settings {
  // Every launch completes before the call returns, as with
  // CUDA_LAUNCH_BLOCKING=1 (S-ASYNC-2): the sim's eager policy. The cuda
  // backend cannot change this after start-up and runs as usual.
  bool launch_blocking = false;
};

struct scenario {
  std::string name;  // "event/record_overwrites_snapshot_race"
  std::string file;  // the path it was read from
  // Which rules it is held to (Note [Two levels] in harness/scenario_place.h).
  scenario_level level = scenario_level::standalone;
  std::filesystem::path corpus_root;  // corpus level: the root, absolute
  std::string description;
  std::vector<rule_citation> rules;  // corpus level: at least one
  // The racy / fixed counterpart ("" when the scenario has none; at the
  // corpus level a buggy scenario has one).
  std::string twin;
  source_mark twin_where;
  scenario_requirements requires_;
  scenario_settings settings;
  std::vector<stream_decl> streams;
  std::vector<event_decl> events;
  std::vector<buffer_decl> buffers;
  std::vector<std::string> graphs;
  std::vector<operation> operations;
  expectation expect;

  const buffer_decl* find_buffer(std::string_view name) const noexcept;
  // Index of the operation with that label, or npos.
  std::size_t find_label(std::string_view label) const noexcept;
  bool expects_diagnostics() const noexcept { return !expect.diagnostics.empty(); }
  // The buggy one of a twin pair: it expects diagnostics, errors or
  // sync-debug warnings; its twin does the same work correctly.
  bool buggy() const noexcept {
    return !expect.diagnostics.empty() || !expect.errors.empty() || !expect.warnings.empty();
  }
};

}  // namespace streamsan::harness
