// Holds back the access log behind a kernel launch whose measured footprint
// has not come back yet.
//
// Note [Measured footprints arrive late]
// A launch's footprint is known only once the kernel has run, long after
// the launch call returned, and the log must stay in issue order: the
// launch's place in the happens-before order is its place in the log. So the
// launch record goes out at the call, with its inferred accesses as
// placeholders, and this sink (between the recorder and the engine, the
// trace writer and any other consumer) holds it and every record after it
// until resolve() supplies the measured accesses. Consumers then see the
// launch with its measured footprint, in its place, and the records behind
// it; reports stay in program order, only later. Nothing is reordered and
// nothing is dropped: a launch whose measurement failed keeps its inferred
// accesses.
//
// Note [Delivered outside the holding lock]
// Delivering a record downstream can block: the engine's ring is full
// while the engine merges a large footprint. The decoding thread used to
// deliver the records a resolve() released under the resolver's lock, and
// every program thread's next record, which only had to be appended behind
// an awaited launch, waited for that lock: cuSolverRf's main thread spent
// 21% of its wall-clock time there under --precise (H200, docs/
// injection.md). So records leave held_ in order under the lock, and are
// delivered outside it by one thread at a time (`delivering_`): the
// deliverer goes on with whatever became ready meanwhile, so a record
// appended behind a delivery in progress is delivered by it, in order, and
// its thread goes on at once. A program thread waits only when that
// backlog of held records passes max_backlog (the memory bound; the old
// backpressure, later), or when nothing is held and no one delivers (it
// delivers its own record).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "sanitizer/log/owned_record.h"
#include "sanitizer/log/record.h"

namespace streamsan::precise {

class footprint_resolver final : public record_sink {
 public:
  using token = std::uint64_t;

  void add_downstream(record_sink& sink);

  // The next kernel_launch record that the calling thread emits awaits its
  // measured footprint; resolve(token, ...) supplies it.
  token await_next_launch();
  // The next graph_instantiate record that the calling thread emits awaits
  // the measured footprints of some of its nodes (Note [Measuring graph
  // kernel nodes] in inject/model); resolve_nodes(token, ...) supplies them.
  token await_next_graph();
  // The calling thread emits no launch (or graph) after all.
  void cancel_await() noexcept;

  // The launch's measured accesses (copied: the caller may reuse its
  // storage), or nullopt to keep its inferred ones; delivers every record no
  // longer held back, or leaves them to the delivery in progress on another
  // thread (Note [Delivered outside the holding lock]). An unknown token
  // (never awaited, or already resolved) is ignored.
  void resolve(token t, std::optional<std::span<const access>> measured);
  // The measured accesses of the awaited graph's nodes, by node index (the
  // other nodes keep theirs); delivers as resolve() does.
  using node_accesses = std::vector<std::pair<std::uint32_t, std::vector<access>>>;
  void resolve_nodes(token t, const node_accesses& measured);

  // Called by one thread at a time (the recorder delivers under its lock):
  // Note [Nothing held, no lock].
  void on_record(const record& r) override;

  // Gives up on every footprint still awaited (at exit, after the last
  // read-back): those launches keep their inferred accesses, and every held
  // record is delivered before it returns. Nothing is lost.
  void release_all();

  std::size_t held() const;      // records held back
  // held(), unless the lock is taken (at a signal, maybe by the thread the
  // signal interrupted: Note [A report within the time a signal leaves]).
  std::optional<std::size_t> held_if_free() const;
  std::size_t awaiting() const;  // launches whose footprint has not come back

  // Held records past which a program thread waits for the deliverer (Note
  // [Delivered outside the holding lock]).
  static constexpr std::size_t max_backlog = std::size_t{1} << 16;

 private:
  struct held_record {
    owned_record record;
    token awaiting = 0;  // 0: ready to deliver
  };
  token await_next(bool graph);
  held_record* find_awaiting_locked(token t);
  void deliver(const record& r);
  // Delivers the ready front of held_, and what becomes ready meanwhile,
  // outside the lock; the caller has made itself the deliverer.
  void deliver_ready(std::unique_lock<std::mutex>& lock);
  // Makes the calling thread the deliverer unless another is, then
  // delivers the ready front.
  void flush(std::unique_lock<std::mutex>& lock);
  void drop_delivered_front_locked();
  void stop_delivering_locked() noexcept;
  void update_quiet_locked() noexcept {
    quiet_.store(first_held_ == held_.size() && !delivering_, std::memory_order_release);
  }
  // Puts a record whose delivery threw back at the front, to go first.
  void keep_undelivered_locked(const record& r);

  mutable std::mutex mutex_;
  // Note [Delivered outside the holding lock]: a thread is delivering; the
  // condition tells of each batch delivered.
  bool delivering_ = false;
  std::condition_variable delivered_;
  // The deliverer's batch, kept for its capacity (Note [Held records in a
  // vector]); only the deliverer touches it.
  std::vector<owned_record> batch_;
  std::vector<record_sink*> downstream_;
  // Note [Held records in a vector]
  // The records held are held_[first_held_ ..): a launch held for an
  // operator's outputs is the only record held, and is delivered a moment
  // later, so the queue empties at nearly every resolve. Emptied, the vector
  // keeps its capacity, and holding the next launch allocates nothing (a
  // deque allocates a block every few records, and frees it when emptied).
  // A queue that does not empty (launches awaiting their measurements) drops
  // its delivered front once that is half of it.
  std::vector<held_record> held_;
  std::size_t first_held_ = 0;
  // Note [Nothing held, no lock]: nothing held and no one delivering;
  // written under mutex_ whenever either changes.
  std::atomic<bool> quiet_{true};
  std::size_t awaiting_ = 0;
  // Only unique: taken without the lock (an operator's launch awaits one).
  std::atomic<token> last_token_{0};
};

}  // namespace streamsan::precise
