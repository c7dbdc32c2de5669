#include "sanitizer/engine/diagnostic.h"

namespace streamsan {

std::string_view to_string(diagnostic_kind kind) noexcept {
  switch (kind) {
    case diagnostic_kind::stream_race: return "stream-race";
    case diagnostic_kind::host_device_race: return "host-device-race";
    case diagnostic_kind::graph_node_race: return "graph-node-race";
    case diagnostic_kind::free_while_in_use: return "free-while-in-use";
    case diagnostic_kind::use_after_free: return "use-after-free";
    case diagnostic_kind::use_before_alloc: return "use-before-alloc";
    case diagnostic_kind::unrecorded_event: return "unrecorded-event";
    case diagnostic_kind::destroyed_stream_use: return "destroyed-stream-use";
    case diagnostic_kind::destroyed_event_use: return "destroyed-event-use";
    case diagnostic_kind::sync_during_capture: return "sync-during-capture";
    case diagnostic_kind::event_device_mismatch: return "event-device-mismatch";
  }
  return "unknown";
}

std::string_view to_string(hazard h) noexcept {
  switch (h) {
    case hazard::none: return "none";
    case hazard::read_after_write: return "read-after-write";
    case hazard::write_after_read: return "write-after-read";
    case hazard::write_after_write: return "write-after-write";
  }
  return "unknown";
}

std::string_view to_string(operation_kind op) noexcept {
  switch (op) {
    case operation_kind::kernel: return "kernel";
    case operation_kind::memcpy: return "memcpy";
    case operation_kind::staged_upload: return "staged upload";
    case operation_kind::memset: return "memset";
    case operation_kind::host_func: return "host function";
    case operation_kind::host_access: return "host access";
    case operation_kind::graph_node: return "graph node";
    case operation_kind::alloc: return "allocation";
    case operation_kind::free: return "free";
    case operation_kind::event_record: return "event record";
    case operation_kind::event_wait: return "event wait";
    case operation_kind::event_synchronize: return "event synchronize";
    case operation_kind::event_query: return "event query";
    case operation_kind::stream_synchronize: return "stream synchronize";
    case operation_kind::stream_query: return "stream query";
    case operation_kind::stream_wait_stream: return "stream wait_stream";
    case operation_kind::device_synchronize: return "device synchronize";
    case operation_kind::stream_destroy: return "stream destroy";
    case operation_kind::event_destroy: return "event destroy";
    case operation_kind::graph_launch: return "graph launch";
  }
  return "unknown";
}

std::string_view to_string(memory_kind kind) noexcept {
  switch (kind) {
    case memory_kind::device: return "device";
    case memory_kind::pinned_host: return "pinned host";
    case memory_kind::pageable_host: return "pageable host";
    case memory_kind::managed: return "managed";
    case memory_kind::stream_ordered: return "stream-ordered";
    case memory_kind::cached_block: return "cached block";
  }
  return "unknown";
}

std::string_view to_string(access_mode mode) noexcept {
  switch (mode) {
    case access_mode::read: return "read";
    case access_mode::write: return "write";
    case access_mode::read_write: return "read-write";
    case access_mode::atomic: return "atomic";
    case access_mode::read_atomic: return "read+atomic";
    case access_mode::write_atomic: return "write+atomic";
    case access_mode::read_write_atomic: return "read-write+atomic";
  }
  return "unknown";
}

std::string_view to_string(access_origin origin) noexcept {
  switch (origin) {
    case access_origin::exact: return "exact";
    case access_origin::measured: return "measured";
    case access_origin::inferred: return "inferred";
  }
  return "unknown";
}

std::string_view to_string(diagnostic_certainty certainty) noexcept {
  switch (certainty) {
    case diagnostic_certainty::confirmed: return "confirmed";
    case diagnostic_certainty::candidate: return "candidate";
  }
  return "unknown";
}

std::vector<const operation_ref*> inferred_sides(const diagnostic& d) {
  std::vector<const operation_ref*> sides;
  if (d.current.origin == access_origin::inferred) sides.push_back(&d.current);
  if (d.previous && d.previous->origin == access_origin::inferred) sides.push_back(&*d.previous);
  return sides;
}

std::vector<byte_interval> conflict_ranges(const diagnostic& d) {
  if (!d.ranges.empty()) return d.ranges;
  if (d.overlap_size == 0) return {};
  return {byte_interval{d.overlap_offset, d.overlap_size}};
}

std::uint64_t conflict_range_count(const diagnostic& d) noexcept {
  if (d.range_count != 0) return d.range_count;
  if (!d.ranges.empty()) return d.ranges.size();
  return d.overlap_size == 0 ? 0 : 1;
}

std::uint64_t conflict_byte_count(const diagnostic& d) noexcept {
  if (d.conflict_bytes != 0) return d.conflict_bytes;
  if (d.ranges.empty()) return d.overlap_size;
  std::uint64_t bytes = 0;
  for (const auto& r : d.ranges) bytes += r.size;
  return bytes;
}

std::string_view to_string(cause_kind kind) noexcept {
  switch (kind) {
    case cause_kind::unrecorded_event: return "unrecorded-event";
    case cause_kind::synchronized_other_stream: return "synchronized-other-stream";
    case cause_kind::waited_other_stream: return "waited-other-stream";
    case cause_kind::query_not_ready: return "query-not-ready";
    case cause_kind::event_recorded_before_producer: return "event-recorded-before-producer";
    case cause_kind::host_function_on_other_stream: return "host-function-on-other-stream";
  }
  return "unknown";
}

std::string_view to_string(timeline_edge_kind kind) noexcept {
  switch (kind) {
    case timeline_edge_kind::issue: return "issue";
    case timeline_edge_kind::event: return "event";
    case timeline_edge_kind::stream_sync: return "stream-sync";
    case timeline_edge_kind::wait_stream: return "wait-stream";
    case timeline_edge_kind::device_sync: return "device-sync";
    case timeline_edge_kind::default_stream: return "default-stream";
    case timeline_edge_kind::copy_return: return "copy-return";
    case timeline_edge_kind::graph_dependency: return "graph-dependency";
  }
  return "unknown";
}

bool is_race(diagnostic_kind kind) noexcept {
  switch (kind) {
    case diagnostic_kind::stream_race:
    case diagnostic_kind::host_device_race:
    case diagnostic_kind::graph_node_race:
    case diagnostic_kind::free_while_in_use:
    case diagnostic_kind::use_after_free:
    case diagnostic_kind::use_before_alloc:
      return true;
    case diagnostic_kind::unrecorded_event:
    case diagnostic_kind::destroyed_stream_use:
    case diagnostic_kind::destroyed_event_use:
    case diagnostic_kind::sync_during_capture:
    case diagnostic_kind::event_device_mismatch:
      return false;
  }
  return false;
}

}  // namespace streamsan
