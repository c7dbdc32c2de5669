#include "inject/precise/footprint_resolver.h"

#include <variant>

#include "sanitizer/log/threads_with_state.h"

namespace streamsan::precise {
namespace {

// The token the calling thread's next launch record takes, and whose.
struct thread_expectation {
  const footprint_resolver* owner = nullptr;
  footprint_resolver::token t = 0;
  bool graph = false;  // a graph_instantiate, not a kernel_launch
};
thread_local thread_expectation expected;
// Note [A thread-local looked at only when it can hold something]
// (sanitizer/log/threads_with_state.h): the threads whose `expected` has an owner.
threads_with_state threads_awaiting;

void set_expected(const thread_expectation& e) noexcept {
  thread_expectation& mine = expected;
  threads_awaiting.changed(mine.owner != nullptr, e.owner != nullptr);
  mine = e;
}

}  // namespace

void footprint_resolver::add_downstream(record_sink& sink) {
  std::lock_guard lock(mutex_);
  downstream_.push_back(&sink);
}

footprint_resolver::token footprint_resolver::await_next(bool graph) {
  const token t = last_token_.fetch_add(1, std::memory_order_relaxed) + 1;
  set_expected({this, t, graph});
  return t;
}

footprint_resolver::token footprint_resolver::await_next_launch() { return await_next(false); }

footprint_resolver::token footprint_resolver::await_next_graph() { return await_next(true); }

void footprint_resolver::cancel_await() noexcept {
  if (!threads_awaiting.none() && expected.owner == this) {
    set_expected({});
  }
}

void footprint_resolver::deliver(const record& r) {
  for (auto* sink : downstream_) sink->on_record(r);
}

// Note [Delivered outside the holding lock]
// Note [Nothing held, no lock]
// Most records (the default mode's, every record between measurements) find
// nothing held and no one delivering, and went downstream after two rounds
// of the lock: one to see that, one after delivering to see whether a record
// had been held behind the delivery meanwhile. None can have been: records
// are held only here, and on_record is called by one thread at a time. Nor
// can another thread start delivering, which needs a held record. So such a
// record, not itself awaited, is delivered without the lock when `quiet_`
// says nothing is held and no one delivers. A delivery that throws puts it
// back at the front, under the lock, as before.
void footprint_resolver::on_record(const record& r) {
  token awaiting = 0;
  if (!threads_awaiting.none()) {
    const thread_expectation mine = expected;
    if (mine.owner == this && (mine.graph ? std::holds_alternative<graph_instantiate>(r.body)
                                          : std::holds_alternative<kernel_launch>(r.body))) {
      awaiting = mine.t;
      set_expected({});
    }
  }
  if (awaiting == 0 && quiet_.load(std::memory_order_acquire)) {
    try {
      deliver(r);  // the record itself, without copying it
    } catch (...) {
      std::lock_guard lock(mutex_);
      keep_undelivered_locked(r);
      throw;
    }
    return;
  }
  std::unique_lock lock(mutex_);
  if (first_held_ == held_.size() && awaiting == 0 && !delivering_) {
    delivering_ = true;
    update_quiet_locked();
    lock.unlock();
    try {
      deliver(r);
    } catch (...) {
      lock.lock();
      stop_delivering_locked();
      keep_undelivered_locked(r);
      throw;
    }
    lock.lock();
    deliver_ready(lock);
    return;
  }
  held_.push_back(held_record{owned_record(r), awaiting});
  if (awaiting != 0) ++awaiting_;
  update_quiet_locked();
  if (delivering_ && held_.size() - first_held_ > max_backlog) {
    delivered_.wait(lock, [&] { return !delivering_ || held_.size() - first_held_ <= max_backlog; });
  }
  flush(lock);
}

// Nothing is lost: delivered next time, before what came after it.
void footprint_resolver::keep_undelivered_locked(const record& r) {
  held_.insert(held_.begin() + static_cast<std::ptrdiff_t>(first_held_),
               held_record{owned_record(r), 0});
  update_quiet_locked();
}

footprint_resolver::held_record* footprint_resolver::find_awaiting_locked(token t) {
  for (std::size_t i = first_held_; i < held_.size(); ++i) {
    if (held_[i].awaiting == t) return &held_[i];
  }
  return nullptr;
}

void footprint_resolver::resolve(token t, std::optional<std::span<const access>> measured) {
  std::unique_lock lock(mutex_);
  if (held_record* h = t != 0 ? find_awaiting_locked(t) : nullptr) {
    if (measured) h->record.replace_accesses(*measured);
    h->awaiting = 0;
    --awaiting_;
  }
  flush(lock);
}

void footprint_resolver::resolve_nodes(token t, const node_accesses& measured) {
  std::unique_lock lock(mutex_);
  if (held_record* h = t != 0 ? find_awaiting_locked(t) : nullptr) {
    for (const auto& [node, accesses] : measured) h->record.replace_node_accesses(node, accesses);
    h->awaiting = 0;
    --awaiting_;
  }
  flush(lock);
}

void footprint_resolver::release_all() {
  std::unique_lock lock(mutex_);
  for (std::size_t i = first_held_; i < held_.size(); ++i) held_[i].awaiting = 0;
  awaiting_ = 0;
  // Everything is delivered when this returns: after the delivery in
  // progress, by this thread.
  delivered_.wait(lock, [&] { return !delivering_; });
  flush(lock);
}

void footprint_resolver::flush(std::unique_lock<std::mutex>& lock) {
  if (delivering_ || first_held_ == held_.size() || held_[first_held_].awaiting != 0) return;
  delivering_ = true;
  update_quiet_locked();
  deliver_ready(lock);
}

// Note [Delivered outside the holding lock]: batches in log order, each
// taken under the lock and delivered outside it; done when the front is
// held back (or nothing is left).
void footprint_resolver::deliver_ready(std::unique_lock<std::mutex>& lock) {
  for (;;) {
    while (first_held_ < held_.size() && held_[first_held_].awaiting == 0) {
      batch_.push_back(std::move(held_[first_held_].record));
      ++first_held_;
    }
    drop_delivered_front_locked();
    if (batch_.empty()) break;
    lock.unlock();
    std::size_t sent = 0;
    try {
      for (; sent < batch_.size(); ++sent) deliver(batch_[sent].get());
    } catch (...) {
      // Nothing is lost: the record that threw and those after it go back
      // to the front, for the next delivery.
      lock.lock();
      std::vector<held_record> back;
      back.reserve(batch_.size() - sent);
      for (std::size_t i = sent; i < batch_.size(); ++i) back.push_back({std::move(batch_[i]), 0});
      held_.insert(held_.begin() + static_cast<std::ptrdiff_t>(first_held_),
                   std::make_move_iterator(back.begin()), std::make_move_iterator(back.end()));
      batch_.clear();
      stop_delivering_locked();
      throw;
    }
    lock.lock();
    batch_.clear();
    delivered_.notify_all();
  }
  stop_delivering_locked();
}

void footprint_resolver::stop_delivering_locked() noexcept {
  delivering_ = false;
  update_quiet_locked();
  delivered_.notify_all();
}

// Note [Held records in a vector]
void footprint_resolver::drop_delivered_front_locked() {
  if (first_held_ == held_.size()) {
    held_.clear();
    first_held_ = 0;
  } else if (2 * first_held_ >= held_.size()) {
    held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(first_held_));
    first_held_ = 0;
  }
}

std::optional<std::size_t> footprint_resolver::held_if_free() const {
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return std::nullopt;
  return held_.size() - first_held_;
}

std::size_t footprint_resolver::held() const {
  std::lock_guard lock(mutex_);
  return held_.size() - first_held_;
}

std::size_t footprint_resolver::awaiting() const {
  std::lock_guard lock(mutex_);
  return awaiting_;
}

}  // namespace streamsan::precise
