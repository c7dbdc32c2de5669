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
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "sanitizer/engine/diagnostic.h"

namespace streamsan {

class diagnostic_log {
 public:
  explicit diagnostic_log(bool deduplicate) : deduplicate_(deduplicate) {}

  void set_callback(std::function<void(const diagnostic&)> callback) {
    callback_ = std::move(callback);
  }

  // Returns true when `d` is new (and was passed to the callback).
  bool add(const diagnostic& d);

  const std::vector<diagnostic>& all() const noexcept { return diagnostics_; }
  std::uint64_t duplicates() const noexcept { return duplicates_; }

 private:
  struct key {
    diagnostic_kind kind;
    hazard hazard_kind;
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

  bool deduplicate_;
  std::function<void(const diagnostic&)> callback_;
  std::vector<diagnostic> diagnostics_;
  std::unordered_map<key, std::size_t, key_hash> index_;
  std::uint64_t duplicates_ = 0;
};

}  // namespace streamsan
