#include "inject/tsan/host_function_markers.h"

#include <condition_variable>
#include <mutex>
#include <utility>

#include "inject/driver/cuda_driver_queries.h"

namespace streamsan::injection {

struct host_function_markers::token {
  host_function_markers* owner = nullptr;
  std::uintptr_t stream_handle = 0;
  std::mutex mutex;
  std::condition_variable changed;
  enum class state : std::uint8_t { launching, logged, cancelled } now = state::launching;
  stream_id stream{};
  tsan::host_function_ticket ticket;
};

namespace {

using token_ptr = std::shared_ptr<host_function_markers::token>;

// Between a call's entry and exit, on the thread that makes it.
thread_local token_ptr launching;

}  // namespace

host_function_markers::host_function_markers(tsan::tsan_bridge& bridge, marker_driver driver,
                                             std::chrono::milliseconds wait_limit)
    : bridge_(bridge), driver_(std::move(driver)), wait_limit_(wait_limit) {}

void host_function_markers::entering(std::uintptr_t stream) {
  launching.reset();
  if (driver_.capturing(stream)) {
    ++not_enqueued_;
    return;
  }
  auto t = std::make_shared<token>();
  t->owner = this;
  t->stream_handle = stream;
  auto* holder = new token_ptr(t);
  if (!driver_.enqueue(stream, &before, holder)) {
    delete holder;
    ++not_enqueued_;
    return;
  }
  launching = std::move(t);
}

void host_function_markers::logged(stream_id stream) {
  if (!launching) return;
  {
    std::lock_guard lock(launching->mutex);
    launching->now = token::state::logged;
    launching->stream = stream;
  }
  launching->changed.notify_all();
}

void host_function_markers::returned(bool succeeded) {
  token_ptr t = std::exchange(launching, nullptr);
  if (!t) return;
  bool logged_it = false;
  {
    std::lock_guard lock(t->mutex);
    logged_it = succeeded && t->now == token::state::logged;
    if (!logged_it) t->now = token::state::cancelled;
  }
  t->changed.notify_all();
  if (!logged_it) {
    ++cancelled_;
    return;
  }
  auto* holder = new token_ptr(t);
  if (!driver_.enqueue(t->stream_handle, &after, holder)) {
    // The body's fiber is never left: the stream's later work waits until
    // a host synchronization gives the function up.
    delete holder;
    ++not_enqueued_;
  }
}

// Note [The marker waits for the log]
void host_function_markers::before(void* data) {
  token_ptr held = std::move(*static_cast<token_ptr*>(data));
  delete static_cast<token_ptr*>(data);
  token& t = *held;
  host_function_markers& self = *t.owner;
  std::unique_lock lock(t.mutex);
  const bool settled = t.changed.wait_for(lock, self.wait_limit_, [&] {
    return t.now != token::state::launching;
  });
  if (!settled) {
    ++self.late_;
    return;
  }
  if (t.now != token::state::logged) return;
  const stream_id stream = t.stream;
  lock.unlock();
  ++self.bracketed_;
  // Last: the thread returns from here as the body's fiber, which must not
  // free or lock (Note [The bridge is invisible to TSan]); the marker after
  // the function still holds the token.
  t.ticket = self.bridge_.begin_host_function(stream);
}

void host_function_markers::after(void* data) {
  const std::unique_ptr<token_ptr> holder(static_cast<token_ptr*>(data));
  token& t = **holder;
  t.owner->bridge_.end_host_function(std::move(t.ticket));
}

marker_statistics host_function_markers::statistics() const noexcept {
  return {bracketed_.load(), late_.load(), cancelled_.load(), not_enqueued_.load()};
}

}  // namespace streamsan::injection
