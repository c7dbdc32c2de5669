#include "sanitizer/report/fix_hint.h"

#include "sanitizer/report/cause_text.h"
#include "sanitizer/report/frame_kind.h"

namespace streamsan {
namespace {

std::string code(const std::string& text) { return "`" + text + "`"; }

bool cuda(fix_vocabulary v) noexcept { return v == fix_vocabulary::cuda; }

// What makes `waiter` wait for `producer` (an operation on `stream`).
std::string order_streams(const std::string& waiter, const std::string& stream,
                          const std::string& producer, const std::string& consumer,
                          fix_vocabulary v) {
  if (cuda(v)) {
    return "make " + waiter + " wait for " + producer + ": " +
           code("cudaEventRecord(e, " + stream + ")") + " after it, " +
           code("cudaStreamWaitEvent(" + waiter + ", e)") + " before " + consumer;
  }
  return "make " + waiter + " wait for " + producer + ": " +
         code(waiter + ".wait_stream(" + stream + ")") + " after " + producer + ", before " +
         consumer;
}

// What makes the host wait for `producer` on `stream`.
std::string host_waits(const std::string& stream, const std::string& producer,
                       const std::string& consumer, fix_vocabulary v) {
  if (cuda(v)) {
    return "wait for " + producer + " before the " + consumer + ": " +
           code("cudaStreamSynchronize(" + stream + ")") + ", or " +
           code("cudaEventSynchronize(e)") + " on an event recorded after it";
  }
  return "wait for " + producer + " before the " + consumer + ": " +
         code(stream + ".synchronize()") + ", or " + code("e.synchronize()") +
         " on an event recorded after it";
}

// The cause says which call to repair (Note [Causes]).
std::optional<std::string> repair_cause(const diagnostic& d, const std::string& producer,
                                        fix_vocabulary v) {
  const ordering_cause& c = *d.cause;
  const std::string stream = to_string(d.previous->stream);
  const std::string event = to_string(c.event);
  const std::string waiter = to_string(c.call.stream);
  switch (c.kind) {
    case cause_kind::unrecorded_event:
      if (d.previous->context != context_kind::stream) return std::nullopt;
      return "record " + event + " after " + producer + ": " +
             code(cuda(v) ? "cudaEventRecord(" + event + ", " + stream + ")"
                          : event + ".record(" + stream + ")") +
             " before the wait";
    case cause_kind::event_recorded_before_producer:
      return "record " + event + " after " + producer + ": move " +
             code(cuda(v) ? "cudaEventRecord(" + event + ", " + stream + ")"
                          : event + ".record(" + stream + ")") +
             " after it";
    case cause_kind::query_not_ready:
      return "do not touch the memory until the query returns ready: repeat " +
             code(cuda(v) ? "cudaStreamQuery(" + stream + ")" : stream + ".query()") +
             " until it does, or " +
             code(cuda(v) ? "cudaStreamSynchronize(" + stream + ")" : stream + ".synchronize()");
    case cause_kind::synchronized_other_stream:
      return "synchronize " + stream + ", where " + producer + " runs: " +
             code(cuda(v) ? "cudaStreamSynchronize(" + stream + ")" : stream + ".synchronize()");
    case cause_kind::waited_other_stream:
      if (!is_none(c.event)) {
        return "record " + event + " on " + stream + ", after " + producer + ", instead of on " +
               to_string(c.named) + ": " +
               code(cuda(v) ? "cudaEventRecord(" + event + ", " + stream + ")"
                            : event + ".record(" + stream + ")");
      }
      return "wait for " + stream + ", where " + producer + " runs, instead of " +
             to_string(c.named) + ": " + code(waiter + ".wait_stream(" + stream + ")") +
             (cuda(v) ? " (or an event recorded on " + stream + " after " + producer + ")" : "");
    case cause_kind::host_function_on_other_stream:
      return std::nullopt;  // the general hint is the fix
  }
  return std::nullopt;
}

// The bytes were freed and handed out again as another allocation (a
// caching allocator's block) while `previous` might still use them.
bool reused(const diagnostic& d) noexcept {
  return !is_none(d.current.alloc) && !is_none(d.previous->alloc) &&
         d.current.alloc != d.previous->alloc;
}

std::string reuse_hint(const diagnostic& d, const std::string& user, fix_vocabulary v) {
  const std::string stream = to_string(d.previous->stream);
  const std::string block = to_string(d.previous->alloc);
  if (cuda(v)) {
    return "free " + block + " only after " + user + " on " + stream + " is done: " +
           code("cudaStreamSynchronize(" + stream + ")") + " or an event wait before the free";
  }
  return "tell the allocator " + block + " is used on " + stream + ": " +
         code("record_stream(" + stream + ")") + " before freeing it, so that it is not handed "
         "out again before " + user + " is done";
}

std::string stream_race_hint(const diagnostic& d, const log_tables& tables, fix_vocabulary v) {
  const operation_ref& previous = *d.previous;
  const std::string producer = operation_name(previous, tables);
  const std::string consumer = operation_name(d.current, tables);
  if (reused(d)) return reuse_hint(d, producer, v);
  if (d.cause) {
    if (auto fix = repair_cause(d, producer, v)) return *fix;
  }
  return order_streams(to_string(d.current.stream), to_string(previous.stream), producer,
                       consumer, v);
}

std::string host_device_hint(const diagnostic& d, const log_tables& tables, fix_vocabulary v) {
  const operation_ref& previous = *d.previous;
  const std::string producer = operation_name(previous, tables);
  if (previous.context == context_kind::host_thread) {
    // The device work came second, from another thread: issue it after the
    // host access, from the thread that made it or after joining that thread.
    return "issue " + operation_name(d.current, tables) + " only after the " +
           operation_name(previous, tables) + " on " + to_string(previous.thread) +
           " (from that thread, or after joining it)";
  }
  if (d.cause) {
    if (auto fix = repair_cause(d, producer, v)) return *fix;
  }
  return host_waits(to_string(previous.stream), producer, operation_name(d.current, tables), v);
}

std::string graph_node_hint(const diagnostic& d, const log_tables& tables, fix_vocabulary v) {
  const operation_ref& previous = *d.previous;
  const std::string from = "node " + std::to_string(previous.graph_node) + " (" +
                           operation_name(previous, tables) + ")";
  const std::string to = "node " + std::to_string(d.current.graph_node) + " (" +
                         operation_name(d.current, tables) + ")";
  if (cuda(v)) {
    return "add the missing edge " + from + " -> " + to + ": " +
           code("cudaGraphAddDependencies(graph, &node" + std::to_string(previous.graph_node) +
                ", &node" + std::to_string(d.current.graph_node) + ", 1)") +
           ", or, when capturing, make the stream that captures " +
           operation_name(d.current, tables) + " wait for an event recorded after " +
           operation_name(previous, tables);
  }
  return "add the missing edge " + from + " -> " + to + ": capture " +
         operation_name(d.current, tables) + " after " + operation_name(previous, tables) +
         " on one stream, or " + code("wait_stream") + " between the capturing streams after " +
         operation_name(previous, tables);
}

std::string free_hint(const diagnostic& d, const log_tables& tables, fix_vocabulary v) {
  const operation_ref& user = *d.previous;
  const std::string name = operation_name(user, tables);
  const std::string stream = to_string(user.stream);
  if (user.context != context_kind::stream) return "free the memory only after the " + name;
  if (cuda(v)) {
    if (d.current.context == context_kind::stream) {
      return order_streams(to_string(d.current.stream), stream, name, "the cudaFreeAsync", v);
    }
    return "free after " + name + " is done: " + code("cudaStreamSynchronize(" + stream + ")") +
           " before the free, or " + code("cudaFreeAsync(ptr, " + stream + ")");
  }
  return "tell the allocator about " + stream + ": " + code("buffer.record_stream(" + stream + ")") +
         " after " + name + ", or " + code(stream + ".synchronize()") + " before the free";
}

std::string use_after_free_hint(const diagnostic& d, const log_tables& tables, fix_vocabulary v) {
  const std::string name = operation_name(d.current, tables);
  const std::string alloc = d.allocation ? to_string(d.allocation->id) : "the memory";
  if (cuda(v)) {
    return "free " + alloc + " only after its last use: move the free after " + name +
           (d.current.context == context_kind::stream
                ? " and a " + code("cudaStreamSynchronize(" + to_string(d.current.stream) + ")")
                : std::string());
  }
  return "keep " + alloc + " alive until " + name + " is done: release it after " +
         (d.current.context == context_kind::stream
              ? code(to_string(d.current.stream) + ".synchronize()")
              : std::string("its last use"));
}

// Note [Graph allocations]: the memory of a graph's alloc node.
std::string graph_allocation_hint(const diagnostic& d, const std::string& consumer) {
  const operation_ref& made = *d.previous;
  if (d.current.op == operation_kind::graph_node && d.current.graph == made.graph) {
    return "make " + consumer + " depend on the graph's allocation node " +
           std::to_string(made.graph_node) + " (a path of dependency edges from it)";
  }
  if (is_none(made.stream)) {
    return "launch the graph that allocates the memory before " + consumer +
           ", and order " + consumer + " after that launch";
  }
  const std::string waiter = to_string(d.current.stream);
  return "make " + waiter + " wait for the graph launch that allocates the memory: " +
         code("cudaEventRecord(e, " + to_string(made.stream) + ")") + " after " +
         code("cudaGraphLaunch") + ", " + code("cudaStreamWaitEvent(" + waiter + ", e)") +
         " before " + consumer;
}

std::string use_before_alloc_hint(const diagnostic& d, const log_tables& tables,
                                  fix_vocabulary v) {
  const std::string allocating = to_string(d.previous->stream);
  const std::string consumer = operation_name(d.current, tables);
  if (d.previous->op == operation_kind::graph_node) return graph_allocation_hint(d, consumer);
  const std::string waiter = to_string(d.current.stream);
  if (cuda(v)) {
    return "make " + waiter + " wait for the allocation: " +
           code("cudaEventRecord(e, " + allocating + ")") + " after " +
           code("cudaMallocAsync") + ", " + code("cudaStreamWaitEvent(" + waiter + ", e)") +
           " before " + consumer + ", or use the memory on " + allocating;
  }
  return "make " + waiter + " wait for the allocation: " +
         code(waiter + ".wait_stream(" + allocating + ")") + " before " + consumer;
}

std::string sync_error_hint(const diagnostic& d, fix_vocabulary v) {
  const std::string event = to_string(d.event);
  const std::string stream = to_string(d.stream);
  switch (d.kind) {
    case diagnostic_kind::unrecorded_event:
      return "record " + event + " after the work it stands for, before waiting on it: " +
             code(cuda(v) ? "cudaEventRecord(" + event + ", producer_stream)"
                          : event + ".record(producer_stream)");
    case diagnostic_kind::destroyed_stream_use:
      return "destroy " + stream + " only after its last use: move " +
             code(cuda(v) ? "cudaStreamDestroy(" + stream + ")" : "the stream's release") +
             " after this call";
    case diagnostic_kind::destroyed_event_use:
      return "destroy " + event + " only after its last use: move " +
             code(cuda(v) ? "cudaEventDestroy(" + event + ")" : "the event's release") +
             " after this call";
    case diagnostic_kind::sync_during_capture:
      return "synchronize after the capture ends: move this call after " +
             code(cuda(v) ? "cudaStreamEndCapture(" + stream + ", &graph)" : "capture_end()");
    case diagnostic_kind::event_device_mismatch:
      return "create " + event + " on the device of " + stream + ": " +
             code(cuda(v) ? "cudaSetDevice(device of " + stream + ")" : "device_guard") +
             " before creating it, or record it on a stream of its own device";
    case diagnostic_kind::stream_race:
    case diagnostic_kind::host_device_race:
    case diagnostic_kind::graph_node_race:
    case diagnostic_kind::free_while_in_use:
    case diagnostic_kind::use_after_free:
    case diagnostic_kind::use_before_alloc:
      break;
  }
  return {};
}

}  // namespace

std::string_view to_string(fix_vocabulary vocabulary) noexcept {
  switch (vocabulary) {
    case fix_vocabulary::cuda: return "cuda";
    case fix_vocabulary::runtime: return "runtime";
  }
  return "cuda";
}

std::optional<fix_vocabulary> parse_fix_vocabulary(std::string_view text) noexcept {
  if (text == "cuda") return fix_vocabulary::cuda;
  if (text == "runtime") return fix_vocabulary::runtime;
  return std::nullopt;
}

fix_vocabulary detect_vocabulary(std::span<const diagnostic> diagnostics, symbolizer& symbols) {
  // The runtime's API, or a Python program's frames (the PyTorch support's
  // Note [Interpreter frames]): torch's words (wait_stream, record_stream).
  const auto through_runtime = [&](stack_id stack) {
    for (const auto address : symbols.tables().stack(stack)) {
      const symbol_info& s = symbols.symbolize(address);
      if (frame_base_name(s.function).starts_with("streamsan::rt::") || s.file.ends_with(".py")) {
        return true;
      }
    }
    return false;
  };
  for (const diagnostic& d : diagnostics) {
    if (through_runtime(d.current.stack)) return fix_vocabulary::runtime;
    if (d.previous && through_runtime(d.previous->stack)) return fix_vocabulary::runtime;
  }
  return fix_vocabulary::cuda;
}

std::string fix_hint(const diagnostic& d, const log_tables& tables, fix_vocabulary v) {
  if (is_race(d.kind) && !d.previous) return {};
  switch (d.kind) {
    case diagnostic_kind::stream_race: return stream_race_hint(d, tables, v);
    case diagnostic_kind::host_device_race: return host_device_hint(d, tables, v);
    case diagnostic_kind::graph_node_race: return graph_node_hint(d, tables, v);
    case diagnostic_kind::free_while_in_use: return free_hint(d, tables, v);
    case diagnostic_kind::use_after_free: return use_after_free_hint(d, tables, v);
    case diagnostic_kind::use_before_alloc: return use_before_alloc_hint(d, tables, v);
    case diagnostic_kind::unrecorded_event:
    case diagnostic_kind::destroyed_stream_use:
    case diagnostic_kind::destroyed_event_use:
    case diagnostic_kind::sync_during_capture:
    case diagnostic_kind::event_device_mismatch:
      return sync_error_hint(d, v);
  }
  return {};
}

}  // namespace streamsan
