#include "sanitizer/log/record_names.h"

#include <array>

namespace streamsan {

std::string_view enumerator_name(memory_kind value) noexcept {
  switch (value) {
    case memory_kind::device: return "device";
    case memory_kind::pinned_host: return "pinned_host";
    case memory_kind::pageable_host: return "pageable_host";
    case memory_kind::managed: return "managed";
    case memory_kind::stream_ordered: return "stream_ordered";
    case memory_kind::cached_block: return "cached_block";
  }
  return {};
}

std::string_view enumerator_name(access_mode value) noexcept {
  switch (value) {
    case access_mode::read: return "read";
    case access_mode::write: return "write";
    case access_mode::read_write: return "read_write";
    case access_mode::atomic: return "atomic";
    case access_mode::read_atomic: return "read_atomic";
    case access_mode::write_atomic: return "write_atomic";
    case access_mode::read_write_atomic: return "read_write_atomic";
  }
  return {};
}

std::string_view enumerator_name(access_origin value) noexcept {
  switch (value) {
    case access_origin::exact: return "exact";
    case access_origin::measured: return "measured";
    case access_origin::inferred: return "inferred";
  }
  return {};
}

std::string_view enumerator_name(stream_flavor value) noexcept {
  switch (value) {
    case stream_flavor::blocking: return "blocking";
    case stream_flavor::non_blocking: return "non_blocking";
    case stream_flavor::legacy_default: return "legacy_default";
    case stream_flavor::per_thread_default: return "per_thread_default";
  }
  return {};
}

std::string_view enumerator_name(free_mode value) noexcept {
  switch (value) {
    case free_mode::synchronizing: return "synchronizing";
    case free_mode::unsynchronized: return "unsynchronized";
    case free_mode::stream_ordered: return "stream_ordered";
    case free_mode::cached: return "cached";
  }
  return {};
}

std::string_view enumerator_name(graph_node_kind value) noexcept {
  switch (value) {
    case graph_node_kind::kernel: return "kernel";
    case graph_node_kind::memcpy: return "memcpy";
    case graph_node_kind::memset: return "memset";
    case graph_node_kind::host_func: return "host_func";
    case graph_node_kind::empty: return "empty";
    case graph_node_kind::event_record: return "event_record";
    case graph_node_kind::event_wait: return "event_wait";
    case graph_node_kind::other: return "other";
    case graph_node_kind::mem_alloc: return "mem_alloc";
    case graph_node_kind::mem_free: return "mem_free";
  }
  return {};
}

namespace {

// In record_body order. The static_assert below fails when an alternative is
// appended to record.h, so that the trace format and the dump learn it too
// (sanitizer/log/record_fields.h).
constexpr std::array<std::string_view, 32> record_kind_names = {
    "string_define", "stack_define", "frame_symbol", "thread_start",
    "stream_create", "stream_destroy", "stream_synchronize", "stream_query",
    "stream_wait_stream", "device_synchronize",
    "event_create", "event_destroy", "event_record", "event_wait",
    "event_synchronize", "event_query",
    "alloc_record", "free_record", "memcpy_record", "memset_record",
    "kernel_launch", "host_func", "host_access",
    "graph_capture_begin", "graph_capture_end", "graph_instantiate",
    "graph_launch", "nvtx_push", "nvtx_pop", "nvtx_mark", "unmodelled_call",
    "thread_exit",
};
static_assert(record_kind_names.size() == record_kind_count,
              "a record alternative was added: name it here and describe its "
              "fields in record_fields.h");
static_assert(record_index<kernel_launch>() == 20 && record_index<unmodelled_call>() == 30 &&
              record_index<thread_exit>() == 31);

}  // namespace

std::string_view record_kind_name(std::size_t index) noexcept {
  return index < record_kind_names.size() ? record_kind_names[index] : std::string_view();
}

}  // namespace streamsan
