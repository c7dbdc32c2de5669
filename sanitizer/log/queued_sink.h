// A record_sink that hands the access log to its downstream sinks on a
// thread of its own, so that a producer (a CUDA callback on the program's
// thread) pays for a copy, not for the analysis.
//
// Note [The engine runs on its own thread]
// The recorder delivers every record under its one lock (Note [One lock
// orders the log]), so whatever a sink does, the program's thread waits
// for. The live engine's work is the larger part of that and needs nothing
// from the program's thread: it only needs the records in log order. So
// the session puts this sink between the log and the engine (and the trace
// writer and the debug dump): on_record copies the record into a slot of a
// ring and returns; a consumer thread delivers the slots, in order, to the
// downstream sinks.
//
// One ring, one producer at a time. Every caller of on_record already holds
// the lock that orders the log (the recorder's, or the footprint
// resolver's, which is taken under it or on its own when a footprint comes
// back late), so a single-producer ring filled under that lock keeps the
// log order with no ordering work of its own: the ring's order is the order
// the lock handed out. Per-thread queues would need a merge by sequence
// number on the consumer, and a record could not be delivered before every
// other thread's queue had shown it nothing earlier was coming.
//
// The producer's cost: the record is copied into a preallocated slot of
// four cache lines, and its spans and views (Note [Records are views])
// into the same lines when they fit (a launch with up to four accesses),
// else into the slot's spill arena, which keeps its capacity; once every
// slot has been used, a record allocates nothing (an arena that outgrew
// large_arena is freed by the consumer, off the program's thread). The
// consumer does not poll: it sleeps until a tick or a batch, so the lines
// the producer writes are not pulled back and forth record by record. No system call either, in the
// steady state: the consumer, once it finds the ring empty, sleeps on a
// futex for at most `tick` (64 ticks once it has found nothing several
// times in a row), and a producer wakes it early only when `wake_batch`
// records wait; records therefore reach the engine late by at most that,
// in order. When the ring is full the producer waits for room
// (back-pressure): a record is never dropped while the sink is open.
//
// close() drains: everything queued is delivered before it returns. After
// close() records are dropped (and counted): the report is being printed.
// Two cases cannot drain on the consumer: close() called on the consumer
// thread itself (a fatal signal while a downstream sink ran; what is still
// queued is not delivered, the sinks may be half-way through a record), and
// a forked child, which has no consumer thread: there the calling thread
// delivers what is queued itself (from the last head the consumer
// published, so up to 64 records it was delivering at the fork come
// again), and every later record inline (Note [A forked child has none of
// our threads] in process_owner.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "sanitizer/log/process_owner.h"
#include "sanitizer/log/record.h"

namespace streamsan {

struct queued_sink_options {
  // Slots in the ring (rounded up to a power of two, at least 2), of 256
  // bytes each: 512 KiB, about 7 ms of a launch-bound loop.
  std::uint32_t capacity = 2048;
  // A sleeping consumer is woken by a producer once this many records wait.
  std::uint32_t wake_batch = 512;
  // The longest the consumer sleeps while records may be waiting.
  std::chrono::microseconds tick{500};
  // The consumer frees an arena larger than this after delivering its record
  // (a rare huge graph), so the ring does not keep the largest one forever.
  std::size_t large_arena = 64 * 1024;
};

struct queued_sink_statistics {
  std::uint64_t delivered = 0;        // records handed to the downstream sinks
  std::uint64_t dropped = 0;          // records after close()
  std::uint64_t undelivered = 0;      // queued, left by close_by()
  std::uint64_t producer_waits = 0;   // the ring was full (back-pressure)
  std::uint64_t consumer_sleeps = 0;  // the consumer found the ring empty and slept
  std::uint64_t wakeups = 0;          // a producer woke the sleeping consumer
  std::uint64_t arena_growths = 0;    // a slot's arena grew (allocations)
  // The consumer's time delivering records to the downstream sinks: next
  // to the program's run time, whether the engine keeps up.
  std::uint64_t busy_ns = 0;
};

class queued_sink final : public record_sink {
 public:
  explicit queued_sink(queued_sink_options options = {});
  // close()
  ~queued_sink() override;
  queued_sink(const queued_sink&) = delete;
  queued_sink& operator=(const queued_sink&) = delete;

  // Not owned; they must outlive the sink (or its close()). Before start().
  void add_downstream(record_sink& sink);
  // Starts the consumer thread. Records given before are queued (and may
  // fill the ring: start() before the first record that could).
  void start();

  // Callers must be serialized (one producer at a time; Note [The engine
  // runs on its own thread]). Copies `r` and returns, or waits while the
  // ring is full.
  void on_record(const record& r) override;

  // Returns once every record given before the call has been delivered.
  void flush() noexcept;
  // Delivers everything queued, ends the consumer thread; later records are
  // dropped. Idempotent. On the consumer thread it only stops the thread.
  void close() noexcept;
  // close(), but the consumer stops at the first record boundary after
  // `deadline` (Note [A report within the time a signal leaves]); returns
  // how many records queued were never delivered (0 after a close()).
  std::uint64_t close_by(std::chrono::steady_clock::time_point deadline) noexcept;
  // The consumer stops at its next record boundary; a close() after it
  // returns at once, and records given after it are dropped (a producer
  // waiting for room stops waiting). Lock-free (a signal handler calls it).
  void give_up() noexcept { give_up_.store(true, std::memory_order_release); }

  bool on_consumer_thread() const noexcept;
  queued_sink_statistics statistics() const noexcept;
  // Note [A launch goes straight into its slot]: whether the launch's own
  // copy moves all that the general copy would (its accesses, and nothing
  // else to move). A test holds it true; a payload field added to
  // kernel_launch makes it false until copy_launch moves it too.
  static bool launch_copy_is_complete();

 private:
  struct slot;
  void consume() noexcept;
  // Dropped after close(), or delivered here (a forked child): true.
  bool bypass(const record& r);
  // A record into slot `s`, its payload into the slot's arena.
  void copy_record(slot& s, const record& r);
  void copy_launch(slot& s, const record_header& header, const kernel_launch& k);
  std::byte* payload_of(slot& s, std::size_t bytes);  // counts a growth
  std::uint64_t deliver_batch(std::uint64_t limit) noexcept;
  std::uint64_t timed_deliver(std::uint64_t limit) noexcept;  // deliver_batch, timed
  void deliver_here() noexcept;  // the calling thread empties the ring
  void wake_producer() noexcept;
  void wait_for_room() noexcept;
  void wake_consumer() noexcept;
  std::uint64_t pending() const noexcept;

  const queued_sink_options options_;
  const std::uint64_t mask_;
  std::unique_ptr<slot[]> slots_;
  std::vector<record_sink*> downstream_;

  // Producer side (under the caller's lock).
  std::uint64_t tail_ = 0;
  std::uint64_t head_seen_ = 0;  // head_ when last read: room without a load
  bool inline_delivery_ = false;  // a forked child delivers on the caller
  // Consumer side, published.
  alignas(64) std::atomic<std::uint64_t> published_tail_{0};
  alignas(64) std::atomic<std::uint64_t> head_{0};
  // Futex words: 1 while the consumer sleeps / a producer waits for room.
  alignas(64) std::atomic<std::uint32_t> consumer_asleep_{0};
  std::atomic<std::uint32_t> producer_waiting_{0};
  std::atomic<bool> closing_{false};
  std::atomic<bool> closed_{false};
  std::atomic<bool> give_up_{false};  // close_by()'s deadline passed

  std::thread consumer_;
  std::atomic<std::thread::id> consumer_id_{};
  std::atomic<bool> started_{false};
  process_owner owner_;  // forked(): a child, with no consumer thread

  // Statistics, each written by one side only.
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> undelivered_{0};
  std::atomic<std::uint64_t> producer_waits_{0};
  std::atomic<std::uint64_t> consumer_sleeps_{0};
  std::atomic<std::uint64_t> wakeups_{0};
  std::atomic<std::uint64_t> arena_growths_{0};
  std::atomic<std::uint64_t> busy_ns_{0};
};

}  // namespace streamsan
