#include "sanitizer/log/queued_sink.h"

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bit>
#include <cstring>
#include <type_traits>
#include <variant>

#include "sanitizer/log/elapsed.h"
#include "sanitizer/log/library_thread.h"
#include "sanitizer/log/record_fields.h"

namespace streamsan {
namespace {

// The futex words are std::atomic<std::uint32_t>: one 32-bit word each.
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));

// Sleeps while `word` holds `expected`, at most `timeout`. A plain futex:
// no hidden state a fork could leave locked, and a wake or a timeout are
// the only ways back (the caller re-reads what it waits for).
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                std::chrono::microseconds timeout) noexcept {
  const auto us = timeout.count();
  const timespec ts{static_cast<time_t>(us / 1000000), static_cast<long>((us % 1000000) * 1000)};
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, &ts,
            nullptr, 0);
}

void futex_wake(std::atomic<std::uint32_t>& word) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr,
            nullptr, 0);
}

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// How often a producer polls a full ring before it sleeps: a few
// microseconds.
constexpr int spins_before_sleep = 256;

// The archives of Note [One field list drives every encoding] that move a
// record's payload (its spans and views, Note [Records are views]) into a
// slot's arena: the first sizes it, the second copies and re-points.
class payload_size : public payload_archive_base {
 public:
  void text(std::string_view, std::string_view& value) { bytes_ += value.size(); }
  void addresses(std::string_view, std::span<const std::uint64_t>& values) {
    bytes_ += values.size_bytes() + alignof(std::uint64_t);
  }
  template <class T>
  void object(std::string_view, T& value) {
    visit_fields(*this, value);
  }
  template <class T>
  void list(std::string_view, std::span<const T>& values) {
    bytes_ += values.size_bytes() + alignof(T);
    for (T element : values) visit_fields(*this, element);  // a copy of views
  }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  std::size_t bytes_ = 0;
};

class payload_copy : public payload_archive_base {
 public:
  explicit payload_copy(std::byte* arena) : next_(arena) {}

  void text(std::string_view, std::string_view& value) {
    if (value.empty()) return;
    auto* to = reinterpret_cast<char*>(place(value.data(), value.size(), 1));
    value = std::string_view(to, value.size());
  }
  void addresses(std::string_view, std::span<const std::uint64_t>& values) {
    values = moved(values);
  }
  template <class T>
  void object(std::string_view, T& value) {
    visit_fields(*this, value);
  }
  template <class T>
  void list(std::string_view, std::span<const T>& values) {
    values = moved(values);
    // Elements are copied; their own lists (a graph node's accesses) still
    // point into the producer's storage until visited.
    for (auto& element : std::span<T>(const_cast<T*>(values.data()), values.size())) {
      visit_fields(*this, element);
    }
  }

 private:
  template <class T>
  std::span<const T> moved(std::span<const T> values) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (values.empty()) return {};
    auto* to = reinterpret_cast<T*>(place(values.data(), values.size_bytes(), alignof(T)));
    return {to, values.size()};
  }
  std::byte* place(const void* from, std::size_t size, std::size_t align) {
    const auto at = (reinterpret_cast<std::uintptr_t>(next_) + align - 1) & ~(align - 1);
    auto* to = reinterpret_cast<std::byte*>(at);
    std::memcpy(to, from, size);
    next_ = to + size;
    return to;
  }
  std::byte* next_;
};

}  // namespace

// Four cache lines: the record, and room for a small payload (a launch's
// first few accesses) in the same lines, so that a typical record is
// written into, and read from, two or three lines; a larger payload goes
// to `spill`, which keeps its capacity (and whose fields are read only
// then).
struct alignas(64) queued_sink::slot {
  static constexpr std::size_t size = 256;
  record r;
  // Right after the record: a launch with one access (32 bytes) fills the
  // second line and no more.
  alignas(8) std::byte inline_payload[size - sizeof(record) - 2 * sizeof(void*)];
  std::unique_ptr<std::byte[]> spill;
  std::size_t spill_capacity = 0;

  // Room for `bytes` of payload; `grew` when the spill arena was allocated.
  std::byte* payload(std::size_t bytes, bool& grew) {
    if (bytes <= sizeof inline_payload) return inline_payload;
    grew = bytes > spill_capacity;
    if (grew) {
      spill_capacity = std::max<std::size_t>(bytes, 2 * sizeof inline_payload);
      spill = std::make_unique_for_overwrite<std::byte[]>(spill_capacity);
    }
    return spill.get();
  }
};


queued_sink::queued_sink(queued_sink_options options)
    : options_(options),
      mask_(std::bit_ceil(std::max<std::uint32_t>(options.capacity, 2)) - 1),
      slots_(std::make_unique<slot[]>(mask_ + 1)) {
  static_assert(sizeof(slot) == slot::size);
}

queued_sink::~queued_sink() {
  close();
  // close() on the consumer thread left it running until the ring was empty.
  if (consumer_.joinable()) {
    if (on_consumer_thread()) {
      consumer_.detach();
    } else {
      consumer_.join();
    }
  }
}

void queued_sink::add_downstream(record_sink& sink) { downstream_.push_back(&sink); }

// The consumer thread takes none of the program's signals (Note [Threads
// of our own take no signals] in library_thread.h).
void queued_sink::start() {
  owner_.claim();
  consumer_ = start_library_thread("streamsan-log", [this] { consume(); });
  consumer_id_.store(consumer_.get_id(), std::memory_order_release);
  started_.store(true, std::memory_order_release);
}

bool queued_sink::on_consumer_thread() const noexcept {
  return consumer_id_.load(std::memory_order_acquire) == std::this_thread::get_id();
}

std::uint64_t queued_sink::pending() const noexcept {
  return tail_ - head_.load(std::memory_order_acquire);
}

bool queued_sink::bypass(const record& r) {
  // After a give_up() the consumer delivers nothing more: a record would
  // wait for room for ever.
  if (closed_.load(std::memory_order_acquire) || give_up_.load(std::memory_order_acquire)) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  if (!inline_delivery_) return false;
  for (auto* sink : downstream_) sink->on_record(r);
  return true;
}

void queued_sink::on_record(const record& r) {
  if (bypass(r)) return;
  if (tail_ - head_seen_ > mask_) {
    head_seen_ = head_.load(std::memory_order_acquire);
    if (tail_ - head_seen_ > mask_) wait_for_room();
    if (bypass(r)) return;
  }
  slot& s = slots_[tail_ & mask_];
  if (const auto* launch = std::get_if<kernel_launch>(&r.body)) {
    copy_launch(s, r.header, *launch);
  } else {
    copy_record(s, r);
  }
  published_tail_.store(++tail_, std::memory_order_release);
  // Note [The engine runs on its own thread]: a sleeping consumer is woken
  // only for a batch; otherwise its tick brings it back.
  if (consumer_asleep_.load(std::memory_order_relaxed) != 0 &&
      pending() >= options_.wake_batch) {
    wake_consumer();
  }
}

void queued_sink::copy_record(slot& s, const record& r) {
  s.r = r;
  payload_size size;
  std::visit([&](auto& body) { visit_fields(size, body); }, s.r.body);
  if (size.bytes() > 0) {
    payload_copy copy(payload_of(s, size.bytes()));
    std::visit([&](auto& body) { visit_fields(copy, body); }, s.r.body);
  }
}

// Note [A launch goes straight into its slot]
// Most records of a launch-bound program are kernel launches, and the
// general copy sizes and copies a record's payload through two visits of
// its variant (a jump through a table each, and a walk of the accesses'
// fields that find nothing to move: an access is three numbers). A launch's
// payload is its accesses alone, trivially copied: copy_record's result
// from one memcpy, in the same arena, taking the same room.
void queued_sink::copy_launch(slot& s, const record_header& header, const kernel_launch& k) {
  static_assert(std::is_trivially_copyable_v<access>);
  kernel_launch copy = k;
  if (!k.accesses.empty()) {
    auto* to = reinterpret_cast<access*>(payload_of(s, k.accesses.size_bytes() + alignof(access)));
    std::memcpy(to, k.accesses.data(), k.accesses.size_bytes());
    copy.accesses = {to, k.accesses.size()};
  }
  s.r.header = header;
  s.r.body = copy;
}

bool queued_sink::launch_copy_is_complete() {
  const access one{};
  kernel_launch k{stream_id{1}, string_id{1}, std::span<const access>(&one, 1)};
  payload_size general;
  visit_fields(general, k);
  // copy_launch's room for the accesses (the same as the general copy's list).
  return general.bytes() == k.accesses.size_bytes() + alignof(access);
}

std::byte* queued_sink::payload_of(slot& s, std::size_t bytes) {
  bool grew = false;
  std::byte* arena = s.payload(bytes, grew);
  if (grew) arena_growths_.fetch_add(1, std::memory_order_relaxed);
  return arena;
}

void queued_sink::wake_consumer() noexcept {
  if (consumer_asleep_.exchange(0, std::memory_order_acq_rel) != 0) {
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    futex_wake(consumer_asleep_);
  }
}

// The slow path: the ring is full. The consumer is woken if asleep, and the
// producer polls, then sleeps until the consumer has made room (it wakes a
// waiting producer once a quarter of the ring is free) or closes. Every
// sleep is bounded by the tick, so a wake-up lost to a race costs a tick.
void queued_sink::wait_for_room() noexcept {
  producer_waits_.fetch_add(1, std::memory_order_relaxed);
  if (!started_.load(std::memory_order_acquire) || owner_.forked()) {
    // No consumer thread: this thread delivers what is queued, and in a
    // forked child every later record too.
    deliver_here();
    inline_delivery_ = started_.load(std::memory_order_acquire);
    head_seen_ = head_.load(std::memory_order_acquire);
    return;
  }
  wake_consumer();
  for (int spin = 0;; ++spin) {
    head_seen_ = head_.load(std::memory_order_acquire);
    if (tail_ - head_seen_ <= mask_ || closed_.load(std::memory_order_acquire) ||
        give_up_.load(std::memory_order_acquire)) {
      return;
    }
    if (spin < spins_before_sleep) {
      cpu_relax();
      continue;
    }
    producer_waiting_.store(1, std::memory_order_release);
    head_seen_ = head_.load(std::memory_order_acquire);
    if (tail_ - head_seen_ <= mask_) {
      producer_waiting_.store(0, std::memory_order_relaxed);
      return;
    }
    wake_consumer();
    futex_wait(producer_waiting_, 1, options_.tick);
  }
}

// Delivers up to `limit` of the records published so far; returns how
// many. The tail is read once and the head published every 64 records, so
// the two sides do not pass those lines back and forth record by record.
std::uint64_t queued_sink::deliver_batch(std::uint64_t limit) noexcept {
  const std::uint64_t first = head_.load(std::memory_order_relaxed);
  const std::uint64_t end =
      std::min(published_tail_.load(std::memory_order_acquire), first + limit);
  for (std::uint64_t head = first; head != end;) {
    if (give_up_.load(std::memory_order_relaxed)) {
      head_.store(head, std::memory_order_release);
      return head - first;
    }
    slot& s = slots_[head & mask_];
    for (auto* sink : downstream_) {
      try {
        sink->on_record(s.r);
      } catch (...) {
        // A sink that cannot take a record (a trace file that failed to
        // write) keeps failing on its own; the others go on.
      }
    }
    if (s.spill_capacity > options_.large_arena) {
      s.spill.reset();
      s.spill_capacity = 0;
    }
    ++head;
    if (head % 64 == 0 || head == end) head_.store(head, std::memory_order_release);
  }
  return end - first;
}

void queued_sink::deliver_here() noexcept {
  while (deliver_batch(mask_ + 1) > 0) {
  }
}

void queued_sink::wake_producer() noexcept {
  if (producer_waiting_.exchange(0, std::memory_order_acq_rel) != 0) {
    futex_wake(producer_waiting_);
  }
}

// Two clock reads a batch (up to a quarter of the ring), not a record.
std::uint64_t queued_sink::timed_deliver(std::uint64_t limit) noexcept {
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t delivered = deliver_batch(limit);
  if (delivered > 0) busy_ns_.fetch_add(nanoseconds_since(start), std::memory_order_relaxed);
  return delivered;
}

void queued_sink::consume() noexcept {
  unsigned idle_sleeps = 0;  // in a row: the sleep grows to 64 ticks
  for (;;) {
    if (give_up_.load(std::memory_order_acquire)) return;
    // A producer waiting for room gets it a quarter of a ring at a time.
    if (timed_deliver((mask_ + 1) / 4) > 0) {
      idle_sleeps = 0;
      if (producer_waiting_.load(std::memory_order_acquire) != 0) wake_producer();
      continue;
    }
    wake_producer();
    if (closing_.load(std::memory_order_acquire)) {
      // close() comes after the last record it must deliver was published.
      if (timed_deliver(mask_ + 1) == 0) return;
      continue;
    }
    // No polling (Note [The engine runs on its own thread]): records
    // arriving meanwhile wait for the tick or a batch.
    consumer_asleep_.store(1, std::memory_order_release);
    consumer_sleeps_.fetch_add(1, std::memory_order_relaxed);
    if (head_.load(std::memory_order_relaxed) ==
            published_tail_.load(std::memory_order_acquire) &&
        !closing_.load(std::memory_order_acquire)) {
      futex_wait(consumer_asleep_, 1, options_.tick * (1u << std::min(idle_sleeps, 6u)));
      ++idle_sleeps;
    }
    consumer_asleep_.store(0, std::memory_order_release);
  }
}

void queued_sink::flush() noexcept {
  const std::uint64_t target = published_tail_.load(std::memory_order_acquire);
  while (head_.load(std::memory_order_acquire) < target) {
    if (!started_.load(std::memory_order_acquire) || owner_.forked() ||
        closed_.load(std::memory_order_acquire) || on_consumer_thread()) {
      return;
    }
    wake_consumer();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// Not concurrent with start() (the owner calls both).
void queued_sink::close() noexcept {
  if (closing_.exchange(true, std::memory_order_acq_rel)) return;
  if (on_consumer_thread()) {
    // A fatal signal while a downstream sink ran on this thread: it cannot
    // wait for itself, and the sinks may be half-way through a record.
    closed_.store(true, std::memory_order_release);
    futex_wake(producer_waiting_);
    return;
  }
  if (!started_.load(std::memory_order_acquire)) {
    deliver_here();
  } else if (owner_.forked()) {
    deliver_here();
    consumer_.detach();
  } else {
    wake_consumer();
    consumer_.join();
    // Left by a give_up() (close_by's, or a signal's).
    undelivered_.store(
        published_tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire),
        std::memory_order_relaxed);
  }
  closed_.store(true, std::memory_order_release);
  producer_waiting_.store(0, std::memory_order_release);
  futex_wake(producer_waiting_);
}

// Note [A report within the time a signal leaves]
// A program stopped by a signal gets its report from the signal handler
// (Note [Reports when the program dies]), and whoever sent the signal
// may kill it a few seconds later (`timeout -k`, a container's stop, a
// batch scheduler). The engine may then have a long queue before it: a
// --precise run of a gather-heavy program had minutes of footprints with
// a million intervals each. So at a signal the consumer delivers until a
// deadline and stops at the next record boundary; what it leaves is
// counted, and the report says that part of the log went unchecked. The
// engine's state stays whole (no record is delivered half-way), so what
// it found before is reported as found. Without a consumer thread (not
// started, a forked child, or called on the consumer itself) this is
// close().
std::uint64_t queued_sink::close_by(std::chrono::steady_clock::time_point deadline) noexcept {
  if (on_consumer_thread() || !started_.load(std::memory_order_acquire) || owner_.forked() ||
      closing_.load(std::memory_order_acquire)) {
    close();
    return 0;
  }
  wake_consumer();
  while (head_.load(std::memory_order_acquire) <
             published_tail_.load(std::memory_order_acquire) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  give_up();
  close();
  return undelivered_.load(std::memory_order_relaxed);
}

queued_sink_statistics queued_sink::statistics() const noexcept {
  queued_sink_statistics s;
  s.delivered = head_.load(std::memory_order_acquire);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  s.undelivered = undelivered_.load(std::memory_order_relaxed);
  s.producer_waits = producer_waits_.load(std::memory_order_relaxed);
  s.consumer_sleeps = consumer_sleeps_.load(std::memory_order_relaxed);
  s.wakeups = wakeups_.load(std::memory_order_relaxed);
  s.arena_growths = arena_growths_.load(std::memory_order_relaxed);
  s.busy_ns = busy_ns_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace streamsan
