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
  bool add(const diagnostic& d) {
    return add(d, [](diagnostic&) {}).fresh;
  }

  struct added {
    std::uint32_t id = 0;  // the entry `d` was added to or folded into
    bool fresh = false;
  };
  // As add(d), and a new entry (its id assigned) is passed to `enrich`
  // before the callback sees it: work that only new reports need.
  template <class Enrich>
  added add(const diagnostic& d, Enrich&& enrich) {
    if (deduplicate_) {
      const auto [it, inserted] = index_.try_emplace(key_of(d), diagnostics_.size());
      if (!inserted) {
        diagnostic& first = diagnostics_[it->second];
        ++first.count;
        ++duplicates_;
        return {first.id, false};
      }
    }
    diagnostic& fresh = diagnostics_.emplace_back(d);
    fresh.count = 1;
    fresh.id = static_cast<std::uint32_t>(diagnostics_.size());
    enrich(fresh);
    if (callback_) callback_(fresh);
    return {fresh.id, true};
  }

  // The entry with `id`, or nullptr.
  diagnostic* find(std::uint32_t id) noexcept {
    return id >= 1 && id <= diagnostics_.size() ? &diagnostics_[id - 1] : nullptr;
  }

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
