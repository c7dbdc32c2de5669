#include "sanitizer/report/cause_text.h"

#include "sanitizer/report/describe.h"

namespace streamsan {
namespace {

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

// "stream#1", or "thread#1" for host work.
std::string where(const operation_ref& op) {
  return op.context == context_kind::stream ? to_string(op.stream) : to_string(op.thread);
}

// Who made the call: the waiting stream, or the host thread.
std::string who(const ordering_cause& c) {
  return c.call.context == context_kind::stream ? to_string(c.call.stream)
                                                : to_string(c.call.thread);
}

bool is_query(const ordering_cause& c) noexcept {
  return c.call.op == operation_kind::event_query || c.call.op == operation_kind::stream_query;
}

bool is_wait(const ordering_cause& c) noexcept {
  return c.call.op == operation_kind::event_wait || c.call.op == operation_kind::stream_wait_stream;
}

// "waited for event#5, recorded on stream#3", "synchronized stream#3",
// "synchronized with event#5, recorded on stream#3".
std::string what_it_did(const ordering_cause& c) {
  const bool event = !is_none(c.event);
  const std::string recorded = event && !is_none(c.named) ? ", recorded on " + to_string(c.named) : "";
  if (is_wait(c)) return "waited for " + (event ? to_string(c.event) + recorded : to_string(c.named));
  if (is_query(c)) return "queried " + (event ? to_string(c.event) + recorded : to_string(c.named));
  return "synchronized " + (event ? "with " + to_string(c.event) + recorded : to_string(c.named));
}

}  // namespace

// Sentences (causes, fixes) name kernels as the report's header does
// (shown_name): a fix that spells out a 3,000-character template name twice
// is a fix nobody reads. The operation's own fields keep the full name.
std::string operation_name(const operation_ref& op, const log_tables& tables) {
  const auto name = tables.string(op.name);
  if (!name.empty() && (op.op == operation_kind::kernel || op.op == operation_kind::graph_node ||
                        op.op == operation_kind::host_func)) {
    return shown_name(op, name);
  }
  return std::string(to_string(op.op));
}

std::string short_operation(const operation_ref& op, const log_tables& tables) {
  std::string text(to_string(op.op));
  if (const auto name = tables.string(op.name); !name.empty()) {
    text += " " + quoted(std::string_view(shown_name(op, name)));
  }
  return text;
}

std::optional<std::string> cause_sentence(const diagnostic& d, const log_tables& tables) {
  if (!d.cause || !d.previous) return std::nullopt;
  const ordering_cause& c = *d.cause;
  const operation_ref& producer = *d.previous;
  const std::string producer_name = short_operation(producer, tables);
  const std::string where_it_runs = where(producer) + ", where " + producer_name + " runs";
  switch (c.kind) {
    case cause_kind::unrecorded_event:
      return who(c) + " " + what_it_did(c) + ", which was never recorded, so the " +
             (is_wait(c) ? "wait" : "call") + " ordered nothing (S-EVENT-3)";
    case cause_kind::synchronized_other_stream:
    case cause_kind::waited_other_stream:
      return who(c) + " " + what_it_did(c) + ", not " + (is_wait(c) ? "for " : "") +
             where_it_runs;
    case cause_kind::query_not_ready:
      return who(c) + " " + what_it_did(c) + ", got not-ready, and went on without waiting for " +
             producer_name + " (S-SYNC-2)";
    case cause_kind::event_recorded_before_producer:
      return to_string(c.event) + " was recorded on " + to_string(c.named) + " before " +
             producer_name + " was enqueued there, so " + who(c) + "'s " +
             (is_wait(c) ? "wait for" : "synchronize with") + " it does not cover " +
             operation_name(producer, tables) + " (S-EVENT-1)";
    case cause_kind::host_function_on_other_stream: {
      const bool current_is_host_fn = d.current.op == operation_kind::host_func;
      const operation_ref& host_fn = current_is_host_fn ? d.current : producer;
      const operation_ref& peer = current_is_host_fn ? producer : d.current;
      return short_operation(host_fn, tables) + " runs on " + to_string(host_fn.stream) +
             ", which nothing orders with " + short_operation(peer, tables) + " on " +
             to_string(peer.stream) + "; a host function is ordered by its own stream only "
             "(S-HOSTFN-1)";
    }
  }
  return std::nullopt;
}

std::optional<std::string> cause_reference(const diagnostic& d) {
  if (!d.cause || d.cause->reported_as == 0) return std::nullopt;
  return "It was reported above as unrecorded-event on " + to_string(d.cause->event) + ".";
}

std::optional<std::string> prevented_sentence(const diagnostic& d) {
  const auto n = d.failed_to_prevent.size();
  if (n == 0) return std::nullopt;
  if (n == 1) return std::string("It failed to prevent the race reported below.");
  return "It failed to prevent the " + std::to_string(n) + " races reported below.";
}

}  // namespace streamsan
