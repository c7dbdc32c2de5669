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

  // Returns true when the callback ran (a new entry, or a confirmation).
  bool add(const diagnostic& d) {
    const auto result = add(d, [](diagnostic&) {});
    return result.fresh || result.confirmed;
  }

  struct added {
    std::uint32_t id = 0;    // the entry `d` was added to or folded into
    bool fresh = false;      // a new entry; the callback ran
    bool confirmed = false;  // it confirmed a candidate (Note [Deduplication]); the callback ran
  };
  // As add(d), and an entry the callback is about to see (new, or newly
  // confirmed with d's details) is passed to `enrich` first: work that only
  // new reports need.
  template <class Enrich>
  added add(const diagnostic& d, Enrich&& enrich) {
    if (!deduplicate_) return append(d, enrich);
    if (!is_candidate(d)) {
      // The common repeat: one lookup.
      if (const auto same = confirmed_.find(key_of(d)); same != confirmed_.end()) {
        return fold(same->second);
      }
    }
    const auto sites = sites_.find(sites_of(d));
    if (is_candidate(d)) return sites == sites_.end() ? append(d, enrich) : fold(sites->second);
    if (sites != sites_.end() && is_candidate(diagnostics_[sites->second])) {
      return confirm(sites->second, d, enrich);
    }
    return append(d, enrich);
  }

  // The entry with `id`, or nullptr.
  diagnostic* find(std::uint32_t id) noexcept {
    return id >= 1 && id <= diagnostics_.size() ? &diagnostics_[id - 1] : nullptr;
  }

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

  template <class Enrich>
  added append(const diagnostic& d, Enrich& enrich) {
    const std::size_t index = diagnostics_.size();
    diagnostic& fresh = diagnostics_.emplace_back(d);
    fresh.count = 1;
    fresh.id = static_cast<std::uint32_t>(diagnostics_.size());
    if (deduplicate_) {
      sites_.try_emplace(sites_of(d), index);
      if (!is_candidate(d)) confirmed_.emplace(key_of(d), index);
    }
    enrich(fresh);
    if (callback_) callback_(fresh);
    return {fresh.id, true, false};
  }
  added fold(std::size_t index) {
    diagnostic& first = diagnostics_[index];
    ++first.count;
    ++duplicates_;
    return {first.id, false, false};
  }
  // The candidate at `index` takes d's details; its id, count (+ 1) and the
  // races a sync error failed to prevent stay.
  template <class Enrich>
  added confirm(std::size_t index, const diagnostic& d, Enrich& enrich) {
    diagnostic& stored = diagnostics_[index];
    diagnostic confirmed = d;
    confirmed.id = stored.id;
    confirmed.count = stored.count + 1;
    confirmed.failed_to_prevent = std::move(stored.failed_to_prevent);
    stored = std::move(confirmed);
    confirmed_.emplace(key_of(stored), index);
    ++duplicates_;
    ++confirmations_;
    enrich(stored);
    if (callback_) callback_(stored);
    return {stored.id, false, true};
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
