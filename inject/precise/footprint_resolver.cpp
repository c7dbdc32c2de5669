#include "inject/precise/footprint_resolver.h"

#include <variant>

namespace streamsan::precise {
namespace {

// The token the calling thread's next launch record takes, and whose.
struct thread_expectation {
  const footprint_resolver* owner = nullptr;
  footprint_resolver::token t = 0;
  bool graph = false;  // a graph_instantiate, not a kernel_launch
};
thread_local thread_expectation expected;

}  // namespace

void footprint_resolver::add_downstream(record_sink& sink) {
  std::lock_guard lock(mutex_);
  downstream_.push_back(&sink);
}

footprint_resolver::token footprint_resolver::await_next(bool graph) {
  const token t = last_token_.fetch_add(1, std::memory_order_relaxed) + 1;
  expected = {this, t, graph};
  return t;
}

footprint_resolver::token footprint_resolver::await_next_launch() { return await_next(false); }

footprint_resolver::token footprint_resolver::await_next_graph() { return await_next(true); }

void footprint_resolver::cancel_await() noexcept {
  if (expected.owner == this) expected = {};
}

void footprint_resolver::deliver(const record& r) {
  for (auto* sink : downstream_) sink->on_record(r);
}

void footprint_resolver::on_record(const record& r) {
  std::lock_guard lock(mutex_);
  token awaiting = 0;
  if (expected.owner == this && (expected.graph ? std::holds_alternative<graph_instantiate>(r.body)
                                                : std::holds_alternative<kernel_launch>(r.body))) {
    awaiting = expected.t;
    expected = {};
  }
  if (first_held_ == held_.size() && awaiting == 0) {
    deliver(r);
    return;
  }
  held_.push_back(held_record{owned_record(r), awaiting});
  if (awaiting != 0) ++awaiting_;
}

footprint_resolver::held_record* footprint_resolver::find_awaiting_locked(token t) {
  for (std::size_t i = first_held_; i < held_.size(); ++i) {
    if (held_[i].awaiting == t) return &held_[i];
  }
  return nullptr;
}

void footprint_resolver::resolve(token t, std::optional<std::span<const access>> measured) {
  std::lock_guard lock(mutex_);
  if (held_record* h = t != 0 ? find_awaiting_locked(t) : nullptr) {
    if (measured) h->record.replace_accesses(*measured);
    h->awaiting = 0;
    --awaiting_;
  }
  flush_locked();
}

void footprint_resolver::resolve_nodes(token t, const node_accesses& measured) {
  std::lock_guard lock(mutex_);
  if (held_record* h = t != 0 ? find_awaiting_locked(t) : nullptr) {
    for (const auto& [node, accesses] : measured) h->record.replace_node_accesses(node, accesses);
    h->awaiting = 0;
    --awaiting_;
  }
  flush_locked();
}

void footprint_resolver::release_all() {
  std::lock_guard lock(mutex_);
  for (std::size_t i = first_held_; i < held_.size(); ++i) held_[i].awaiting = 0;
  awaiting_ = 0;
  flush_locked();
}

// Note [Held records in a vector]
void footprint_resolver::flush_locked() {
  while (first_held_ < held_.size() && held_[first_held_].awaiting == 0) {
    deliver(held_[first_held_].record.get());
    ++first_held_;
  }
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
