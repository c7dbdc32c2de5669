#include "sanitizer/log/recorder.h"

#include <boost/stacktrace/safe_dump_to.hpp>

#include <algorithm>
#include <array>

#include "sanitizer/log/thread_state_ref.h"

namespace streamsan {
namespace {

std::atomic<std::uint64_t> next_generation{1};

struct thread_cache {
  std::uint64_t generation = 0;
  thread_id id{};
  // Note [A thread hook with the thread's id]: whose hook ran for this id.
  const void* hooked_for = nullptr;
};
thread_local thread_cache this_thread;

// deliver_locked(), inline in emit_with_stack (Note [A record's fast path
// inline]).
[[gnu::always_inline]] inline void deliver_to(std::span<record_sink* const> sinks,
                                              const record_header& header,
                                              const record_body& body) {
  const record r{header, body};
  for (auto* sink : sinks) sink->on_record(r);
}

}  // namespace

std::size_t recorder::frames_hash::operator()(
    std::span<const std::uint64_t> frames) const noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const auto f : frames) {
    h ^= f;
    h *= 0x100000001b3ull;
  }
  return static_cast<std::size_t>(h);
}

recorder::recorder(recorder_options options)
    : options_(options), generation_(next_generation.fetch_add(1)) {
  string_texts_.emplace_back();  // string_id 0 = none
  stack_frames_.push_back(nullptr);
}

void recorder::add_sink(record_sink& sink) {
  std::lock_guard lock(mutex_);
  // Replay the definitions so the new sink can resolve every id it will see.
  std::uint64_t seq = next_seq_;
  for (std::uint32_t i = 1; i < string_texts_.size(); ++i) {
    sink.on_record(record{{seq, thread_id{}, stack_id{}},
                          string_define{string_id{i}, string_texts_[i]}});
  }
  for (std::uint32_t i = 1; i < stack_frames_.size(); ++i) {
    sink.on_record(record{{seq, thread_id{}, stack_id{}},
                          stack_define{stack_id{i}, *stack_frames_[i]}});
  }
  for (const auto& [id, name] : threads_) {
    sink.on_record(record{{seq, thread_id{id}, stack_id{}}, thread_start{name}});
  }
  sinks_.push_back(&sink);
}

void recorder::remove_sink(record_sink& sink) {
  std::lock_guard lock(mutex_);
  sinks_.erase(std::remove(sinks_.begin(), sinks_.end(), &sink), sinks_.end());
}

thread_id recorder::current_thread() {
  if (this_thread.generation == generation_) return this_thread.id;
  std::lock_guard lock(mutex_);
  return thread_locked({});
}

void recorder::name_current_thread(std::string_view name) {
  std::lock_guard lock(mutex_);
  if (this_thread.generation != generation_) {
    thread_locked(name);  // a new thread: its one thread_start carries the name
    return;
  }
  // A known thread is renamed by a second thread_start.
  const auto id = this_thread.id;
  const auto name_id = intern_locked(name);
  threads_[raw(id)] = name_id;
  deliver_locked({next_seq_++, id, stack_id{}}, thread_start{name_id});
}

void recorder::thread_exited() {
  std::lock_guard lock(mutex_);
  if (this_thread.generation != generation_) return;  // never recorded here
  const thread_id id = this_thread.id;
  this_thread = thread_cache{};
  threads_.erase(raw(id));
  deliver_locked({next_seq_++, id, stack_id{}}, thread_exit{});
}

// Note [A record's fast path inline]
// Every record looks its thread up and most their stack, and each found its
// answer at once (the thread known, the stack the last one) after a
// prologue that saved every register its rare path needs: some 40
// instructions of a launch's callbacks. The answers found at once are
// inline in the recorder's members; what a new thread or a new stack does
// is a call.
thread_id recorder::thread_locked(std::string_view name) {
  if (this_thread.generation == generation_) return this_thread.id;
  return new_thread_locked(name);
}

thread_id recorder::new_thread_locked(std::string_view name) {
  const thread_id id{++last_thread_};
  this_thread = thread_cache{generation_, id};
  const auto name_id = name.empty() ? string_id{} : intern_locked(name);
  threads_.emplace(raw(id), name_id);
  deliver_locked({next_seq_++, id, stack_id{}}, thread_start{name_id});
  return id;
}

string_id recorder::intern(std::string_view text) {
  std::lock_guard lock(mutex_);
  return intern_locked(text);
}

string_id recorder::intern_locked(std::string_view text) {
  if (text.empty()) return string_id{};
  if (const auto it = strings_.find(text); it != strings_.end()) {
    return it->second;
  }
  const string_id id{static_cast<std::uint32_t>(string_texts_.size())};
  const auto [it, inserted] = strings_.emplace(std::string(text), id);
  string_texts_.emplace_back(it->first);
  deliver_locked({next_seq_++, thread_id{}, stack_id{}}, string_define{id, it->first});
  return id;
}

// Note [The last stack again]
// Consecutive records mostly carry the same stack (a PyTorch operator's
// output block, its launches and the next operator's blocks all take the
// operator's interpreter frames: Note [A block's stack is its operator's]
// in inject/session/torch_entry.cpp), and a loop's launches come from one
// place. The stack interned last is compared first: a few word compares,
// where the table costs a hash of every frame and a probe.
stack_id recorder::intern_stack_locked(std::span<const std::uint64_t> frames) {
  if (!is_none(last_stack_) && frames_equal{}(frames, *stack_frames_[raw(last_stack_)])) {
    return last_stack_;
  }
  return intern_other_stack_locked(frames);
}

stack_id recorder::intern_other_stack_locked(std::span<const std::uint64_t> frames) {
  if (const auto it = stacks_.find(frames); it != stacks_.end()) return last_stack_ = it->second;
  std::vector<std::uint64_t> key(frames.begin(), frames.end());
  const stack_id id{static_cast<std::uint32_t>(stack_frames_.size())};
  const auto [it, inserted] = stacks_.emplace(std::move(key), id);
  stack_frames_.push_back(&it->first);
  deliver_locked({next_seq_++, thread_id{}, stack_id{}}, stack_define{id, it->first});
  return last_stack_ = id;
}

constexpr std::size_t max_frames = 64;

[[gnu::noinline]] std::size_t recorder::capture_frames(unsigned skip_frames,
                                                   std::span<std::uint64_t> frames) const {
  // Raw return addresses only; symbolization waits until a report is printed.
  if (!options_.capture_stacks || options_.stack_depth == 0) return 0;
  std::array<const void*, max_frames + 1> raw_frames{};
  const std::size_t wanted = std::min<std::size_t>({options_.stack_depth, max_frames, frames.size()});
  // +2 skips this function and its caller (emit, capture_stack). The buffer
  // size bounds the depth; the count includes a terminating 0.
  const std::size_t stored = boost::stacktrace::safe_dump_to(
      skip_frames + 2, raw_frames.data(), (wanted + 1) * sizeof(raw_frames[0]));
  std::size_t depth = std::min(stored > 0 ? stored - 1 : 0, wanted);
  while (depth > 0 && raw_frames[depth - 1] == nullptr) --depth;
  for (std::size_t i = 0; i < depth; ++i) {
    frames[i] = reinterpret_cast<std::uint64_t>(raw_frames[i]);
  }
  return depth;
}

void recorder::emit(const record_body& body, unsigned skip_frames) {
  // Capture outside the lock.
  std::array<std::uint64_t, max_frames> frames{};
  const std::size_t depth = capture_frames(skip_frames, frames);
  std::lock_guard lock(mutex_);
  const auto thread = thread_locked({});
  const auto stack =
      depth > 0 ? intern_stack_locked({frames.data(), depth}) : stack_id{};
  deliver_locked({next_seq_++, thread, stack}, body);
}

stack_id recorder::capture_stack(unsigned skip_frames) {
  std::array<std::uint64_t, max_frames> frames{};
  const std::size_t depth = capture_frames(skip_frames, frames);
  if (depth == 0) return stack_id{};
  std::lock_guard lock(mutex_);
  return intern_stack_locked({frames.data(), depth});
}

stack_id recorder::intern_stack(std::span<const std::uint64_t> frames) {
  if (frames.size() > options_.stack_depth) frames = frames.first(options_.stack_depth);
  if (!options_.capture_stacks || frames.empty()) return stack_id{};
  std::lock_guard lock(mutex_);
  return intern_stack_locked(frames);
}

void recorder::emit_with_stack(const record_body& body,
                               std::span<const std::uint64_t> frames) {
  emit_with_stack(body, frames, thread_hook{});
}

// Note [A thread hook with the thread's id]
// The model sets a pthread key at a thread's first record, for its
// thread_exit (Note [Threads end in the log] in inject/model/cuda_model.h),
// and asked pthread_getspecific whether it had at every record: a call, for
// an answer that changes once in a thread's life. The recorder looks the
// thread's id up anyway, so the id's entry remembers whose hook ran for it.
// A thread's key is cleared only as it ends, before the destructor whose
// thread_exited() clears the entry too, so a hook that ran for the entry
// still holds; a new id (a new thread, a record after thread_exit) runs it
// again, as does another hook's record in between: setting a key to the
// value it has changes nothing.
void recorder::emit_with_stack(const record_body& body, std::span<const std::uint64_t> frames,
                               thread_hook hook) {
  if (frames.size() > options_.stack_depth) frames = frames.first(options_.stack_depth);
  if (!options_.capture_stacks) frames = {};
  std::lock_guard lock(mutex_);
  thread_cache& me = thread_state_ref(this_thread);
  const auto thread = me.generation == generation_ ? me.id : new_thread_locked({});
  if (hook.run != nullptr && me.hooked_for != hook.context && hook.run(hook.context)) {
    me.hooked_for = hook.context;
  }
  const auto stack = frames.empty() ? stack_id{} : intern_stack_locked(frames);
  deliver_to(sinks_, {next_seq_++, thread, stack}, body);
}

void recorder::deliver_locked(const record_header& header, const record_body& body) {
  deliver_to(sinks_, header, body);
}

std::uint64_t recorder::records_emitted() const noexcept {
  std::lock_guard lock(mutex_);
  return next_seq_ - 1;
}

}  // namespace streamsan
