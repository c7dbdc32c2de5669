// The diagnostics found so far, deduplicated, and the live callback.
//
// Note [Deduplication]
// A race in a training loop fires on every iteration; the user wants it
// once, with a count. Two diagnostics are the same when they have the same
// kind and hazard and the same pair of call sites: the current and previous
// operations' stacks, kinds and names (and graph node indices, so the
// distinct node pairs of one graph stay apart). Without stacks (capture off,
// or a producer that has none) call sites cannot be told apart, so the key
// falls back to the operations' kinds and names plus the allocation, event
// and stream involved. A repeat increments the first entry's count and does
// not call the callback again.
//
// Deduplication must not swallow a confirmation (Note [Candidates and
// confirmed diagnostics]). A candidate's hazard is a guess (an inferred
// footprint reads and writes everything), so candidates are matched on the
// pair of call sites alone:
//   - a candidate folds into any earlier entry of its call sites, candidate
//     or confirmed (count + 1, no callback): a confirmed race there already
//     says it, and a candidate there already asked for a measurement;
//   - a confirmed diagnostic folds into an earlier confirmed one with the
//     same key, hazard included (as without candidates); else, when its call
//     sites have a candidate, that entry becomes confirmed: its details are
//     replaced by the confirmed diagnostic's, its count goes on (+ 1), and
//     the callback runs again with it, now confirmed. Else it is new.
// So the callback runs once per entry as a candidate (if it started as one)
// and once when it is or becomes confirmed; a log of exact accesses
// deduplicates exactly as before.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "sanitizer/engine/diagnostic.h"

namespace streamsan {

// What add() did with a diagnostic.
enum class diagnostic_added : std::uint8_t {
  added,      // a new entry; the callback ran
  folded,     // counted in an earlier entry; no callback
  confirmed,  // confirmed an earlier candidate (now confirmed); the callback ran
};

class diagnostic_log {
 public:
  explicit diagnostic_log(bool deduplicate) : deduplicate_(deduplicate) {}

  void set_callback(std::function<void(const diagnostic&)> callback) {
    callback_ = std::move(callback);
  }

  diagnostic_added add(const diagnostic& d);

  const std::vector<diagnostic>& all() const noexcept { return diagnostics_; }
  // Diagnostics folded into an earlier entry (confirmations included).
  std::uint64_t duplicates() const noexcept { return duplicates_; }
  std::uint64_t confirmations() const noexcept { return confirmations_; }

 private:
  struct key {
    diagnostic_kind kind;
    hazard hazard_kind;  // hazard::none in a key of call sites alone
    bool has_previous;
    operation_kind current_op;
    operation_kind previous_op;
    stack_id current_stack;
    stack_id previous_stack;
    string_id current_name;
    string_id previous_name;
    std::uint32_t current_node;
    std::uint32_t previous_node;
    alloc_id alloc;
    event_id event;
    stream_id stream;
    friend bool operator==(const key&, const key&) = default;
  };
  struct key_hash {
    std::size_t operator()(const key& k) const noexcept;
  };
  static key key_of(const diagnostic& d) noexcept;
  static key sites_of(const diagnostic& d) noexcept;
  diagnostic_added append(const diagnostic& d);
  diagnostic_added fold(std::size_t index);
  diagnostic_added confirm(std::size_t index, const diagnostic& d);
  void notify(const diagnostic& d) {
    if (callback_) callback_(d);
  }

  bool deduplicate_;
  std::function<void(const diagnostic&)> callback_;
  std::vector<diagnostic> diagnostics_;
  // Confirmed entries by key_of; every entry by sites_of (the first one).
  std::unordered_map<key, std::size_t, key_hash> confirmed_;
  std::unordered_map<key, std::size_t, key_hash> sites_;
  std::uint64_t duplicates_ = 0;
  std::uint64_t confirmations_ = 0;
};

}  // namespace streamsan
