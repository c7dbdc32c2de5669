#include "sanitizer/report/kind_description.h"

namespace streamsan {
namespace {

constexpr kind_description stream_race{
    "Unordered accesses on two CUDA streams",
    "Two operations on different CUDA streams access the same bytes, at least one writes, "
    "and nothing orders one before the other (S-STREAM-2). They may run concurrently or in "
    "either order.",
    "Order the streams: record an event after the first operation and make the second stream "
    "wait on it (cudaEventRecord + cudaStreamWaitEvent, or torch's wait_stream / wait_event), "
    "or issue both operations on one stream.",
    "error"};
constexpr kind_description host_device_race{
    "Host access unordered with device work",
    "The host reads or writes memory that device work still in flight may access, and at least "
    "one of them writes (S-COPY-2, S-MEM-6).",
    "Synchronize the host with the device work before touching the memory "
    "(cudaStreamSynchronize, cudaEventSynchronize, or a query that returned complete).",
    "error"};
constexpr kind_description graph_node_race{
    "Unordered accesses by two nodes of one CUDA graph",
    "Two nodes of one graph access the same bytes, at least one writes, and no dependency path "
    "connects them, so a launch may run them concurrently (S-GRAPH-2).",
    "Add a dependency edge between the nodes (or capture them on one stream).",
    "error"};
constexpr kind_description free_while_in_use{
    "Memory freed while device work may still use it",
    "Memory is released while an operation on a stream that is not ordered before the free may "
    "still access it (S-MEM-1, S-MEM-5).",
    "Synchronize with, or order the free after, every stream that uses the memory "
    "(cudaFreeAsync on the using stream, record_stream for caching allocators).",
    "error"};
constexpr kind_description use_after_free{
    "Access to freed memory",
    "An operation accesses an allocation after it was freed.",
    "Keep the allocation alive until every operation that uses it has been ordered before the "
    "free.",
    "error"};
constexpr kind_description use_before_alloc{
    "Access before a stream-ordered allocation is ready",
    "An operation accesses memory from cudaMallocAsync without being ordered after the "
    "allocating operation (S-MEM-5).",
    "Use the memory on the allocating stream, or make the using stream wait for an event "
    "recorded after the allocation.",
    "error"};
constexpr kind_description unrecorded_event{
    "Wait on an event that was never recorded",
    "A wait or a synchronize names an event that was never recorded; it succeeds at once "
    "and orders nothing (S-EVENT-3). A query of such an event is not reported on its own.",
    "Record the event on the producing stream before waiting on it.",
    "warning"};
constexpr kind_description destroyed_stream_use{
    "Use of a destroyed stream",
    "An operation names a CUDA stream that was already destroyed (S-STREAM-9).",
    "Destroy streams only after their last use.",
    "error"};
constexpr kind_description destroyed_event_use{
    "Use of a destroyed event",
    "An operation names a CUDA event that was already destroyed.",
    "Destroy events only after their last use.",
    "error"};
constexpr kind_description sync_during_capture{
    "Synchronization while a stream is capturing a graph",
    "A synchronizing call is made while a stream is capturing a CUDA graph, which is illegal "
    "(S-GRAPH-1).",
    "Move the synchronization out of the capture region.",
    "error"};
constexpr kind_description event_device_mismatch{
    "Event recorded on a stream of another device",
    "An event is recorded on a stream of a device other than the event's own; only streams on "
    "the event's device may record it (S-EVENT-6).",
    "Create the event on the device of the stream that records it.",
    "error"};

}  // namespace

const kind_description& describe(diagnostic_kind kind) noexcept {
  switch (kind) {
    case diagnostic_kind::stream_race: return stream_race;
    case diagnostic_kind::host_device_race: return host_device_race;
    case diagnostic_kind::graph_node_race: return graph_node_race;
    case diagnostic_kind::free_while_in_use: return free_while_in_use;
    case diagnostic_kind::use_after_free: return use_after_free;
    case diagnostic_kind::use_before_alloc: return use_before_alloc;
    case diagnostic_kind::unrecorded_event: return unrecorded_event;
    case diagnostic_kind::destroyed_stream_use: return destroyed_stream_use;
    case diagnostic_kind::destroyed_event_use: return destroyed_event_use;
    case diagnostic_kind::sync_during_capture: return sync_during_capture;
    case diagnostic_kind::event_device_mismatch: return event_device_mismatch;
  }
  return stream_race;  // unreachable for valid enumerators
}

}  // namespace streamsan
