#include "harness/scenario.h"

namespace streamsan::harness {

std::string_view to_string(buffer_kind kind) noexcept {
  switch (kind) {
    case buffer_kind::device: return "device";
    case buffer_kind::pinned: return "pinned";
    case buffer_kind::pageable: return "pageable";
    case buffer_kind::managed: return "managed";
    case buffer_kind::stream_ordered: return "stream_ordered";
    case buffer_kind::cached: return "cached";
  }
  return "unknown";
}

std::string to_string(const buffer_slice& slice) {
  return slice.buffer + '[' + std::to_string(slice.begin) + ':' + std::to_string(slice.end) + ']';
}

namespace {

std::string_view target_name(sync_target t) noexcept {
  switch (t) {
    case sync_target::device: return "device";
    case sync_target::stream: return "stream";
    case sync_target::event: return "event";
  }
  return "unknown";
}

struct name_visitor {
  std::string operator()(const launch_op& op) const {
    return "launch " + std::string(to_string(op.kernel));
  }
  std::string operator()(const memcpy_op& op) const { return op.async ? "memcpy async" : "memcpy"; }
  std::string operator()(const memset_op& op) const { return op.async ? "memset async" : "memset"; }
  std::string operator()(const record_op&) const { return "record"; }
  std::string operator()(const wait_op&) const { return "wait"; }
  std::string operator()(const wait_stream_op&) const { return "wait_stream"; }
  std::string operator()(const synchronize_op& op) const {
    return "synchronize " + std::string(target_name(op.target));
  }
  std::string operator()(const query_op& op) const {
    return "query " + std::string(target_name(op.target));
  }
  std::string operator()(const elapsed_time_op&) const { return "elapsed_time"; }
  std::string operator()(const destroy_op& op) const {
    return "destroy " + std::string(target_name(op.target));
  }
  std::string operator()(const alloc_op&) const { return "alloc"; }
  std::string operator()(const free_op&) const { return "free"; }
  std::string operator()(const record_stream_op&) const { return "record_stream"; }
  std::string operator()(const empty_cache_op&) const { return "empty_cache"; }
  std::string operator()(const memory_fraction_op&) const { return "memory_fraction"; }
  std::string operator()(const reset_peak_stats_op&) const { return "reset_peak_stats"; }
  std::string operator()(const memory_stats_op&) const { return "memory_stats"; }
  std::string operator()(const host_write_op&) const { return "host_write"; }
  std::string operator()(const host_read_op&) const { return "host_read"; }
  std::string operator()(const host_func_op&) const { return "host_func"; }
  std::string operator()(const capture_begin_op&) const { return "capture_begin"; }
  std::string operator()(const capture_end_op&) const { return "capture_end"; }
  std::string operator()(const graph_launch_op&) const { return "graph_launch"; }
  std::string operator()(const device_guard_enter_op&) const { return "device_guard"; }
  std::string operator()(const device_guard_exit_op&) const { return "end of device_guard"; }
  std::string operator()(const stream_guard_enter_op&) const { return "stream_guard"; }
  std::string operator()(const stream_guard_exit_op&) const { return "end of stream_guard"; }
  std::string operator()(const set_device_op&) const { return "set_device"; }
  std::string operator()(const nvtx_push_op&) const { return "nvtx_push"; }
  std::string operator()(const nvtx_pop_op&) const { return "nvtx_pop"; }
  std::string operator()(const nvtx_mark_op&) const { return "nvtx_mark"; }
  std::string operator()(const sync_debug_mode_op&) const { return "sync_debug_mode"; }
};

}  // namespace

std::string op_name(const operation_body& body) { return std::visit(name_visitor{}, body); }

std::string describe(const operation& op) {
  if (!op.label.empty()) return "'" + op.label + "'";
  return "the " + op_name(op.body) + " at line " + std::to_string(op.where.line);
}

const buffer_decl* scenario::find_buffer(std::string_view name) const noexcept {
  for (const auto& b : buffers) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

std::size_t scenario::find_label(std::string_view label) const noexcept {
  for (std::size_t i = 0; i < operations.size(); ++i) {
    if (operations[i].label == label) return i;
  }
  return std::string::npos;
}

}  // namespace streamsan::harness
