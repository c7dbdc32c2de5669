#include "harness/rule_catalog.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace streamsan::harness {
namespace {

using namespace std::string_view_literals;

// Generated from semantics.md (Note [A copy of the rules]); statements are
// normalized.
constexpr std::array<rule_statement, 42> rules{{
    {"S-ASYNC-1"sv,
     "GPU operations are asynchronous: a call enqueues work on a device and returns; "
     "the work runs later. [notes: Asynchronous execution]"sv},
    {"S-ASYNC-2"sv,
     "Errors of asynchronous work surface at a later call, not at the launch. Forcing "
     "synchronous execution (CUDA_LAUNCH_BLOCKING=1) makes each launch complete before "
     "the call returns, so errors appear at the launch site. [notes]"sv},
    {"S-STREAM-1"sv,
     "A stream is a linear sequence of execution that belongs to one device. "
     "Operations inside one stream run in the order they were issued. [torch.cuda: "
     "Stream; notes: CUDA streams]"sv},
    {"S-STREAM-2"sv,
     "Operations on different streams may run concurrently and in any relative order "
     "unless explicitly synchronized (synchronize, wait_stream, wait_event). Canonical "
     "incorrect example: the default stream fills A (normal_), then a side stream "
     "computes sum(A) with no synchronization — the sum may start before the fill "
     "finishes. [notes: CUDA streams]"sv},
    {"S-STREAM-3"sv,
     "When the current stream is the default stream, data movement done by the "
     "framework is synchronized for the user; with non-default streams synchronization "
     "is the user's responsibility. [notes]"sv},
    {"S-STREAM-4"sv,
     "Stream.query() is true iff all work submitted to the stream has completed. "
     "[torch.cuda]"sv},
    {"S-STREAM-5"sv,
     "Stream.synchronize() blocks the host until all work in the stream has completed "
     "(cudaStreamSynchronize). [torch.cuda]"sv},
    {"S-STREAM-6"sv,
     "Stream.wait_stream(other): all future work submitted to this stream waits until "
     "all work submitted to other at the time of the call completes. The call does not "
     "block the host. Work enqueued on other after the call is not covered. "
     "[torch.cuda]"sv},
    {"S-STREAM-7"sv,
     "Streams have priorities; a lower number is a higher priority; the valid range is "
     "device dependent (cudaDeviceGetStreamPriorityRange). Priority changes "
     "scheduling, never ordering guarantees. [torch.cuda; rt-api]"sv},
    {"S-STREAM-8"sv,
     "Streams are per device. Selecting a stream of another device also switches the "
     "current device to that stream's device. [torch.cuda: stream]"sv},
    {"S-STREAM-9"sv,
     "Destroying a stream with pending work returns immediately; the work still "
     "completes. Using a destroyed stream is an error. [rt-api]"sv},
    {"S-DEFAULT-1"sv,
     "The legacy default stream (stream 0 / cudaStreamLegacy) implicitly synchronizes "
     "with every blocking stream of the same device: work on the legacy stream waits "
     "for all prior work on blocking streams, and work later issued to a blocking "
     "stream waits for prior legacy-stream work. [guide: Default stream; rt-api: "
     "Stream synchronization behavior]"sv},
    {"S-DEFAULT-2"sv,
     "Streams created with cudaStreamNonBlocking do not synchronize with the legacy "
     "default stream. [rt-api]"sv},
    {"S-DEFAULT-3"sv,
     "The per-thread default stream (cudaStreamPerThread, or compiling with "
     "--default-stream per-thread) is an ordinary stream private to its host thread; "
     "it does not synchronize with other streams except the legacy default stream, "
     "like any blocking stream. [rt-api]"sv},
    {"S-EVENT-1"sv,
     "Event.record(stream) captures the work submitted to stream at the time of the "
     "call. Recording again overwrites what the event captures; later waits and "
     "queries use the most recent record. [torch.cuda; rt-api]"sv},
    {"S-EVENT-2"sv,
     "Stream.wait_event(e) / Event.wait(stream): future work on the stream waits for "
     "the work captured by e; the call returns without waiting. [torch.cuda]"sv},
    {"S-EVENT-3"sv,
     "Waiting on (or synchronizing with, or querying) an event that has never been "
     "recorded is a no-op that succeeds immediately: it orders nothing. Code that does "
     "so almost always has a bug. [rt-api: cudaStreamWaitEvent, cudaEventSynchronize, "
     "cudaEventQuery]"sv},
    {"S-EVENT-4"sv,
     "Event.query() is true iff all work captured by the event has completed (true for "
     "an event never recorded). Event.synchronize() blocks the host until the captured "
     "work has completed. [torch.cuda]"sv},
    {"S-EVENT-5"sv,
     "elapsed_time(end) returns the milliseconds between two events; both must be "
     "created with timing enabled (timing is off by default) and both must have been "
     "recorded and completed, otherwise it is an error. [torch.cuda]"sv},
    {"S-EVENT-6"sv,
     "Events are created lazily on first record. Only streams on the event's device "
     "may record it; streams on any device may wait on it. [torch.cuda: Event]"sv},
    {"S-EVENT-7"sv,
     "Blocking-sync events make a host waiting on them sleep instead of spin; "
     "interprocess events can be shared between processes. Neither changes ordering. "
     "[torch.cuda: Event]"sv},
    {"S-SYNC-1"sv,
     "synchronize(device) waits for all work in all streams of the device "
     "(cudaDeviceSynchronize). [torch.cuda]"sv},
    {"S-SYNC-2"sv,
     "A successful completion check (Stream.query() or Event.query() returning true) "
     "orders the completed work before the host's subsequent actions, exactly like a "
     "synchronize. A query that returns false orders nothing. [rt-api; torch.cuda]"sv},
    {"S-SYNC-3"sv,
     "Sync debug mode (set_sync_debug_mode: default / warn / error) reports operations "
     "that synchronize the host with the device, so that accidental synchronizations "
     "can be found and removed. [torch.cuda]"sv},
    {"S-COPY-1"sv,
     "Synchronous cudaMemcpy: pageable host → device first synchronizes and returns "
     "once the source is staged (the DMA may still be running); pinned host → device "
     "is synchronous with the host; device → host (pageable or pinned) returns only "
     "when the copy is complete; device → device performs no host synchronization; "
     "host → host is fully synchronous. [rt-api] Synchronous copies are issued to the "
     "legacy default stream, so S-DEFAULT-1 applies to them too: a host → host "
     "cudaMemcpy on a legacy-default-stream thread returns only after prior work on "
     "blocking streams has completed (observed on an H100 with CUDA 13: a kernel on a "
     "blocking stream is always finished when such a copy returns)."sv},
    {"S-COPY-2"sv,
     "cudaMemcpyAsync: between device and pageable host memory it might be "
     "synchronous; host → host is synchronous; everything else is fully asynchronous — "
     "the host must not touch the buffers until it has synchronized with the copy. "
     "[rt-api]"sv},
    {"S-COPY-3"sv,
     "Non-blocking copies (to(..., non_blocking=True)) from pinned host memory overlap "
     "with host work; device → host copies block by default. [notes: pinned memory "
     "buffers; torch.cuda]"sv},
    {"S-COPY-4"sv,
     "cudaMemset is asynchronous with respect to the host except when the target is "
     "pinned host memory or a Unified Memory (managed) region, in which case it is "
     "fully synchronous; the Async forms are always asynchronous. [rt-api; driver api: "
     "API synchronization behavior, Memset]"sv},
    {"S-COPY-5"sv,
     "Operations across devices are not allowed, except copies; direct access to "
     "another device's memory needs peer access (can_device_access_peer). [notes; "
     "torch.cuda]"sv},
    {"S-MEM-1"sv,
     "The caching allocator keeps freed blocks for reuse without synchronizing the "
     "device. A block freed after use on stream A is only safe to reuse on stream B "
     "once B is ordered after A's uses; record_stream(s) tells the allocator that a "
     "block is in use on s, and the allocator then delays reuse until the work on s at "
     "free time has completed. [notes: memory management; torch.cuda]"sv},
    {"S-MEM-2"sv,
     "Statistics: memory_allocated counts bytes held by live allocations; "
     "memory_reserved counts bytes the allocator holds from the device (live + "
     "cached); max_ are their peaks since start or since reset_peak_memory_stats; "
     "memory_stats reports current / peak / allocated / freed for allocations, "
     "segments, active blocks and bytes, plus num_ooms and num_alloc_retries. "
     "[torch.cuda]"sv},
    {"S-MEM-3"sv,
     "empty_cache() returns all unoccupied cached blocks to the device; it never frees "
     "live memory and never raises what a process can use. [torch.cuda]"sv},
    {"S-MEM-4"sv,
     "set_per_process_memory_fraction(f) caps the allocator at f × total memory; "
     "allocating beyond it fails with an out-of-memory error (after freeing cached "
     "blocks and retrying). [torch.cuda]"sv},
    {"S-MEM-5"sv,
     "cudaFree synchronizes the device before releasing memory. cudaMallocAsync / "
     "cudaFreeAsync are stream-ordered: the allocation is valid only for work ordered "
     "after the allocating operation, and the memory must not be used by work that is "
     "not ordered before the freeing operation. [guide: stream-ordered memory "
     "allocator; rt-api]"sv},
    {"S-MEM-6"sv,
     "Managed memory may be accessed by host and device; while a kernel that may "
     "access it is in flight the host must not access it (on devices without "
     "concurrent managed access). [guide: unified memory]"sv},
    {"S-HOSTFN-1"sv,
     "A host function enqueued on a stream (cudaLaunchHostFunc) runs after all prior "
     "work on that stream; later work on the stream waits for it. It must not call "
     "CUDA APIs. [rt-api]"sv},
    {"S-GRAPH-1"sv,
     "While a stream is capturing (is_current_stream_capturing), work issued to it is "
     "recorded into a graph, not executed. Synchronizing a capturing stream or the "
     "device during capture is illegal. [torch.cuda: graphs; guide]"sv},
    {"S-GRAPH-2"sv,
     "A graph launch runs the graph's nodes respecting only the graph's dependency "
     "edges; two nodes without a path between them may run concurrently. The launch as "
     "a whole is ordered in its stream like one operation. [guide: CUDA graphs]"sv},
    {"S-NVTX-1"sv,
     "nvtx.range_push(msg) / range_pop() / mark(msg) annotate host timelines; ranges "
     "nest. [torch.cuda: NVTX]"sv},
    {"S-COMM-1"sv,
     "broadcast, scatter, gather, reduce_add move tensors between devices; each is "
     "ordered on the streams of the devices it touches. [torch.cuda: communication "
     "collectives]"sv},
    {"S-DEV-1"sv,
     "There is a current device per host thread; allocations and streams without an "
     "explicit device go to it. A device guard (device(i)) changes it for a scope and "
     "restores it on exit; a negative index or none is a no-op. [torch.cuda: device, "
     "set_device]"sv},
    {"S-DEV-2"sv,
     "device_count, get_device_name, get_device_capability, get_device_properties, "
     "mem_get_info report the devices that are visible (CUDA_VISIBLE_DEVICES). "
     "[torch.cuda]"sv},
}};

}  // namespace

std::span<const rule_statement> rule_catalog() noexcept { return rules; }

std::string_view rule_text(std::string_view id) noexcept {
  const auto it = std::find_if(rules.begin(), rules.end(), [&](const auto& r) { return r.id == id; });
  return it == rules.end() ? std::string_view() : it->statement;
}

bool is_known_rule(std::string_view id) noexcept { return !rule_text(id).empty(); }

std::string normalize_rule_text(std::string_view text) {
  std::string out;
  bool space = false;
  for (const char c : text) {
    if (c == '`' || c == '*') continue;
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

bool quotes_rule(std::string_view id, std::string_view quote) {
  const auto statement = rule_text(id);
  const std::string q = normalize_rule_text(quote);
  return !statement.empty() && !q.empty() && statement.find(q) != std::string_view::npos;
}

}  // namespace streamsan::harness
