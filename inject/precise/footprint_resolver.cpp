#include "inject/precise/footprint_resolver.h"

#include <variant>

namespace streamsan::precise {
namespace {

// The token the calling thread's next launch record takes, and whose.
struct thread_expectation {
  const footprint_resolver* owner = nullptr;
  footprint_resolver::token t = 0;
};
thread_local thread_expectation expected;

}  // namespace

void footprint_resolver::add_downstream(record_sink& sink) {
  std::lock_guard lock(mutex_);
  downstream_.push_back(&sink);
}

footprint_resolver::token footprint_resolver::await_next_launch() {
  std::lock_guard lock(mutex_);
  expected = {this, ++last_token_};
  return last_token_;
}

void footprint_resolver::cancel_await() noexcept {
  if (expected.owner == this) expected = {};
}

void footprint_resolver::deliver(const record& r) {
  for (auto* sink : downstream_) sink->on_record(r);
}

void footprint_resolver::on_record(const record& r) {
  std::lock_guard lock(mutex_);
  token awaiting = 0;
  if (expected.owner == this && std::holds_alternative<kernel_launch>(r.body)) {
    awaiting = expected.t;
    expected = {};
  }
  if (held_.empty() && awaiting == 0) {
    deliver(r);
    return;
  }
  held_.push_back(held_record{owned_record(r), awaiting});
  if (awaiting != 0) ++awaiting_;
}

void footprint_resolver::resolve(token t, std::optional<std::vector<access>> measured) {
  std::lock_guard lock(mutex_);
  for (auto& h : held_) {
    if (h.awaiting != t) continue;
    if (measured) h.record.replace_accesses(*measured);
    h.awaiting = 0;
    --awaiting_;
    break;
  }
  flush_locked();
}

void footprint_resolver::release_all() {
  std::lock_guard lock(mutex_);
  for (auto& h : held_) h.awaiting = 0;
  awaiting_ = 0;
  flush_locked();
}

void footprint_resolver::flush_locked() {
  while (!held_.empty() && held_.front().awaiting == 0) {
    deliver(held_.front().record.get());
    held_.pop_front();
  }
}

std::size_t footprint_resolver::held() const {
  std::lock_guard lock(mutex_);
  return held_.size();
}

std::size_t footprint_resolver::awaiting() const {
  std::lock_guard lock(mutex_);
  return awaiting_;
}

}  // namespace streamsan::precise
