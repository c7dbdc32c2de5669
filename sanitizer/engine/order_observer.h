// The engine's ordering decisions, announced as it makes them, so that
// another race detector can mirror its happens-before relation exactly
// (sanitizer/tsan: the ThreadSanitizer bridge, docs/tsan-bridge.md).
//
// Note [Announcing every join]
// The engine skips joins it knows to change nothing (Note [Skipping redundant
// joins]): the source's clock has not moved since the last one. A mirror must
// not skip them. The engine only sees what is logged, while a host thread's
// clock in ThreadSanitizer moves with every lock it takes, so "the host did
// nothing since the last launch" holds for the engine and not for the
// mirror. joined() is therefore announced for every join a rule makes,
// before the engine's own skip test, and event_recorded() for every record,
// even one whose snapshot the engine keeps. A mirror that applies each
// announcement as "dst acquires src's clock as of now" holds at least the
// engine's order: it never calls two operations unordered that the engine
// orders (it may order more: it also sees the program's own locks).
//
// Contexts are named by kind and id (the stream_id or thread_id), never by
// clock slot: slots are the engine's business.
#pragma once

#include <cstdint>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/log/record.h"

namespace streamsan {

struct context_ref {
  context_kind kind = context_kind::stream;
  std::uint32_t id = 0;  // raw stream_id or thread_id

  friend bool operator==(const context_ref&, const context_ref&) = default;
};

// One access the engine applied to an allocation's history, and the
// operation that made it (for the mirror's reports).
struct observed_access {
  context_ref context;          // where it ran: a stream, or a host thread
  std::uint64_t address = 0;    // of the first byte (the allocation's address + offset)
  std::uint64_t size = 0;
  access_mode mode = access_mode::read;
  // Exact, measured, or inferred from a kernel's parameters (then possibly
  // larger than what the kernel touches).
  access_origin origin = access_origin::exact;
  memory_kind memory = memory_kind::device;  // of the root allocation: where the bytes live
  alloc_id alloc{};
  operation_kind op = operation_kind::kernel;
  string_id name{};             // kernel, host function or graph node name
  stack_id stack{};             // where the operation was issued
  std::uint64_t seq = 0;
};

class order_observer {
 public:
  virtual ~order_observer() = default;

  // Before and after the engine handles one record (on the thread that
  // emitted it, when the engine is live).
  virtual void record_begins(const record_header& h) = 0;
  virtual void record_ends() = 0;

  // A stream's context was created; it starts from `creator`'s clock (Note
  // [Streams start from their creator's clock]).
  virtual void stream_created(context_ref stream, std::int32_t device, stream_flavor flavor,
                              context_ref creator) = 0;
  // The stream was destroyed; its work still counts (S-STREAM-9).
  virtual void stream_destroyed(context_ref stream) = 0;
  // `dst` is now ordered after everything `src` did so far (Note [Announcing
  // every join]).
  virtual void joined(context_ref dst, context_ref src) = 0;
  // The event's snapshot is now `src`'s clock, replacing the previous one
  // (S-EVENT-1).
  virtual void event_recorded(event_id event, context_ref src) = 0;
  // `dst` joined the event's snapshot (S-EVENT-2, S-EVENT-4, S-SYNC-2).
  virtual void event_joined(context_ref dst, event_id event) = 0;
  virtual void event_destroyed(event_id event) = 0;
  // A host function was enqueued on `stream` (S-HOSTFN-1), after the joins of
  // its enqueue and before its declared accesses.
  virtual void host_function_enqueued(context_ref stream, string_id name, stack_id stack,
                                      std::uint64_t seq) = 0;
  // An access the engine checked and recorded (not one it ignored as
  // untracked, unknown or freed).
  virtual void accessed(const observed_access& a) = 0;
};

}  // namespace streamsan
