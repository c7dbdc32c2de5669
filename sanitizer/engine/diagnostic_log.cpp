#include "sanitizer/engine/diagnostic_log.h"

namespace streamsan {

diagnostic_log::key diagnostic_log::key_of(const diagnostic& d) noexcept {
  const operation_ref none_op{};
  const operation_ref& prev = d.previous ? *d.previous : none_op;
  key k{};
  k.kind = d.kind;
  k.hazard_kind = d.hazard_kind;
  k.has_previous = d.previous.has_value();
  k.current_op = d.current.op;
  k.previous_op = prev.op;
  k.current_stack = d.current.stack;
  k.previous_stack = prev.stack;
  k.current_name = d.current.name;
  k.previous_name = prev.name;
  k.current_node = d.current.graph_node;
  k.previous_node = prev.graph_node;
  if (is_none(d.current.stack)) {
    // No call sites to tell reports apart: fall back to the objects.
    k.alloc = d.allocation ? d.allocation->id : alloc_id{};
    k.event = d.event;
    k.stream = d.stream;
  }
  return k;
}

std::size_t diagnostic_log::key_hash::operator()(const key& k) const noexcept {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  const auto mix = [&h](std::uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  };
  mix((static_cast<std::uint64_t>(k.kind) << 16) | (static_cast<std::uint64_t>(k.hazard_kind) << 8) |
      static_cast<std::uint64_t>(k.has_previous));
  mix((static_cast<std::uint64_t>(k.current_op) << 8) | static_cast<std::uint64_t>(k.previous_op));
  mix((std::uint64_t{raw(k.current_stack)} << 32) | raw(k.previous_stack));
  mix((std::uint64_t{raw(k.current_name)} << 32) | raw(k.previous_name));
  mix((std::uint64_t{k.current_node} << 32) | k.previous_node);
  mix((std::uint64_t{raw(k.alloc)} << 32) | raw(k.event));
  mix(raw(k.stream));
  return static_cast<std::size_t>(h);
}

diagnostic_log::key diagnostic_log::sites_of(const diagnostic& d) noexcept {
  key k = key_of(d);
  k.hazard_kind = hazard::none;
  return k;
}

// Note [Deduplication]
diagnostic_added diagnostic_log::add(const diagnostic& d) {
  if (!deduplicate_) return append(d);
  if (!is_candidate(d)) {
    // The common repeat: one lookup.
    if (const auto same = confirmed_.find(key_of(d)); same != confirmed_.end()) {
      return fold(same->second);
    }
  }
  const auto sites = sites_.find(sites_of(d));
  if (is_candidate(d)) return sites == sites_.end() ? append(d) : fold(sites->second);
  if (sites != sites_.end() && is_candidate(diagnostics_[sites->second])) {
    return confirm(sites->second, d);
  }
  return append(d);
}

diagnostic_added diagnostic_log::append(const diagnostic& d) {
  const std::size_t index = diagnostics_.size();
  diagnostics_.push_back(d);
  diagnostics_.back().count = 1;
  if (deduplicate_) {
    sites_.try_emplace(sites_of(d), index);
    if (!is_candidate(d)) confirmed_.emplace(key_of(d), index);
  }
  notify(diagnostics_.back());
  return diagnostic_added::added;
}

diagnostic_added diagnostic_log::fold(std::size_t index) {
  ++diagnostics_[index].count;
  ++duplicates_;
  return diagnostic_added::folded;
}

diagnostic_added diagnostic_log::confirm(std::size_t index, const diagnostic& d) {
  diagnostic& stored = diagnostics_[index];
  const std::uint32_t count = stored.count + 1;
  stored = d;
  stored.count = count;
  confirmed_.emplace(key_of(stored), index);
  ++duplicates_;
  ++confirmations_;
  notify(stored);
  return diagnostic_added::confirmed;
}

}  // namespace streamsan
