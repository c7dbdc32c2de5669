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

diagnostic_log::key diagnostic_log::sites_of(const diagnostic& d) noexcept {
  key k = key_of(d);
  k.hazard_kind = hazard::none;
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

}  // namespace streamsan
