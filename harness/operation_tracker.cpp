#include "harness/operation_tracker.h"

#include <algorithm>

namespace streamsan::harness {

void operation_tracker::on_record(const record& r) {
  if (spans_.empty() || spans_.back().second != current_) {
    spans_.emplace_back(r.header.seq, current_);
  }
  if (const auto* a = std::get_if<alloc_record>(&r.body); a != nullptr && !buffer_.empty()) {
    buffers_.emplace(raw(a->alloc), buffer_);
  }
  engine_.on_record(r);
}

std::size_t operation_tracker::operation_of(std::uint64_t seq) const noexcept {
  // The last span starting at or before seq.
  const auto it = std::upper_bound(spans_.begin(), spans_.end(), seq,
                                   [](std::uint64_t s, const auto& span) { return s < span.first; });
  if (it == spans_.begin()) return no_operation;
  return std::prev(it)->second;
}

std::string operation_tracker::buffer_of(alloc_id id) const {
  const auto it = buffers_.find(raw(id));
  return it == buffers_.end() ? std::string() : it->second;
}

}  // namespace streamsan::harness
