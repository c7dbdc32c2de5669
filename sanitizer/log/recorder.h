// The producer side of the access log. The runtime and the injection library
// each own one recorder; it assigns ids, sequence numbers and host thread
// ids, interns strings and call stacks, and hands each record to its sinks.
//
// Note [One lock orders the log]
// Host threads issue CUDA calls concurrently, but happens-before analysis
// needs one total order that is consistent with each thread's program order
// and with the order in which the driver saw the calls. emit() takes a mutex
// around "assign sequence number + deliver", so the log order is the order
// in which calls entered the recorder. Stack capture, the expensive part,
// happens before the lock is taken.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sanitizer/log/record.h"

namespace streamsan {

struct recorder_options {
  bool capture_stacks = true;
  unsigned stack_depth = 16;  // frames kept per record
};

class recorder {
 public:
  explicit recorder(recorder_options options = {});
  recorder(const recorder&) = delete;
  recorder& operator=(const recorder&) = delete;

  // Sinks are not owned and must outlive the recorder's use. Adding a sink
  // replays the definitions made so far, so it can resolve every id.
  void add_sink(record_sink& sink);
  void remove_sink(record_sink& sink);

  // The calling host thread's id; the first call from a thread emits a
  // thread_start record.
  thread_id current_thread();
  void name_current_thread(std::string_view name);
  // The calling host thread ends: emits its thread_exit record, after which
  // the engine retires its clock slot (Note [Retiring context slots]). Call
  // it as the last thing the thread does (a thread_local or pthread key
  // destructor), never for the main thread, whose thread_locals die at exit()
  // before static destructors that may still record. Nothing happens for a
  // thread that never recorded; a thread that records again afterwards gets
  // a new id and a new thread_start, as a new thread.
  void thread_exited();

  string_id intern(std::string_view text);

  stream_id new_stream_id() noexcept { return stream_id{++last_stream_}; }
  event_id new_event_id() noexcept { return event_id{++last_event_}; }
  alloc_id new_alloc_id() noexcept { return alloc_id{++last_alloc_}; }
  graph_id new_graph_id() noexcept { return graph_id{++last_graph_}; }

  // Records `body` from the calling thread. skip_frames drops the innermost
  // frames (the instrumentation itself) from the captured stack.
  void emit(const record_body& body, unsigned skip_frames = 0);

  // Records `body` with a call stack the producer captured itself (raw return
  // addresses, innermost first; empty = no stack). For producers whose own
  // frames (driver, profiler callbacks) make a fixed skip count meaningless,
  // and that need a faster unwinder than emit()'s.
  void emit_with_stack(const record_body& body, std::span<const std::uint64_t> frames);
  // The same, and first, under the recorder's lock, `run(context)` unless it
  // returned true for the calling thread's id already (or another hook's
  // record came in between): Note [A thread hook with the thread's id].
  struct thread_hook {
    bool (*run)(const void* context) = nullptr;
    const void* context = nullptr;
  };
  void emit_with_stack(const record_body& body, std::span<const std::uint64_t> frames,
                       thread_hook hook);

  // The calling thread's call stack, interned (its stack_define delivered),
  // for a record that carries a stack in its body (graph_node::stack); none
  // when stacks are off. skip_frames drops the innermost frames.
  stack_id capture_stack(unsigned skip_frames = 0);
  // Interns a stack the producer captured itself (as for emit_with_stack),
  // for a record body that carries one; none for an empty span or when
  // stacks are off.
  stack_id intern_stack(std::span<const std::uint64_t> frames);

  std::uint64_t records_emitted() const noexcept;
  const recorder_options& options() const noexcept { return options_; }

 private:
  // Note [Interning without allocating]
  // Every record looks its stack up, and most look a string up, so both
  // tables use heterogeneous lookup: a hit (the common case) builds no key.
  struct frames_hash {
    using is_transparent = void;
    std::size_t operator()(std::span<const std::uint64_t> frames) const noexcept;
    std::size_t operator()(const std::vector<std::uint64_t>& frames) const noexcept {
      return (*this)(std::span<const std::uint64_t>(frames));
    }
  };
  struct frames_equal {
    using is_transparent = void;
    bool operator()(std::span<const std::uint64_t> a, std::span<const std::uint64_t> b) const noexcept {
      return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }
  };
  struct text_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept {
      return std::hash<std::string_view>{}(text);
    }
  };

  // Raw return addresses of the caller of the function that calls this
  // (plus skip_frames), innermost first; returns how many were stored.
  std::size_t capture_frames(unsigned skip_frames, std::span<std::uint64_t> frames) const;
  // Note [A record's fast path inline]: inline in recorder.cpp, where the
  // calls are; the rare paths are the [[gnu::noinline]] ones.
  [[gnu::always_inline]] inline thread_id thread_locked(std::string_view name);
  [[gnu::noinline]] thread_id new_thread_locked(std::string_view name);
  [[gnu::always_inline]] inline stack_id intern_stack_locked(
      std::span<const std::uint64_t> frames);
  [[gnu::noinline]] stack_id intern_other_stack_locked(std::span<const std::uint64_t> frames);
  string_id intern_locked(std::string_view text);
  void deliver_locked(const record_header& header, const record_body& body);

  const recorder_options options_;
  const std::uint64_t generation_;  // tells thread-local caches apart

  std::atomic<std::uint32_t> last_stream_{0};
  std::atomic<std::uint32_t> last_event_{0};
  std::atomic<std::uint32_t> last_alloc_{0};
  std::atomic<std::uint32_t> last_graph_{0};

  mutable std::mutex mutex_;
  std::vector<record_sink*> sinks_;
  std::uint64_t next_seq_ = 1;
  std::uint32_t last_thread_ = 0;
  std::unordered_map<std::string, string_id, text_hash, std::equal_to<>> strings_;
  std::vector<std::string_view> string_texts_;  // index = raw(string_id)
  std::unordered_map<std::vector<std::uint64_t>, stack_id, frames_hash, frames_equal> stacks_;
  std::vector<const std::vector<std::uint64_t>*> stack_frames_;  // index = raw(stack_id)
  stack_id last_stack_{};  // Note [The last stack again]
  // Live threads (raw id -> name), replayed to a sink added later; an
  // exited thread leaves, so thread churn does not grow it.
  std::map<std::uint32_t, string_id> threads_;
};

}  // namespace streamsan
