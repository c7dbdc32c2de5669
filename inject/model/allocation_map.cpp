#include "inject/model/allocation_map.h"

namespace streamsan::injection {
namespace {

template <class Map>
auto containing(const Map& m, std::uint64_t address) {
  auto it = m.upper_bound(address);
  if (it == m.begin()) return m.end();
  --it;
  const auto& a = it->second;
  // A zero-sized allocation still owns its base address.
  if (address == a.base || address - a.base < a.size) return it;
  return m.end();
}

}  // namespace

std::size_t allocation_map::insert(const allocation& a) {
  std::size_t retired = 0;
  const std::uint64_t end = a.base + (a.size == 0 ? 1 : a.size);
  // Live entries that overlap [base, end): the first may start before base.
  auto it = live_.upper_bound(a.base);
  if (it != live_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.base + prev->second.size > a.base) it = prev;
  }
  while (it != live_.end() && it->first < end) {
    remember_freed(it->second);
    it = live_.erase(it);
    ++retired;
  }
  allocation entry = a;
  entry.born = ++epoch_;
  entry.died = ~std::uint64_t{0};
  live_.emplace(entry.base, entry);
  return retired;
}

std::optional<allocation> allocation_map::erase(std::uint64_t base) {
  const auto it = live_.find(base);
  if (it == live_.end()) return std::nullopt;
  const allocation a = it->second;
  live_.erase(it);
  remember_freed(a);
  return a;
}

std::optional<allocation> allocation_map::erase(std::uint64_t base, alloc_id id) {
  const auto it = live_.find(base);
  if (it == live_.end() || it->second.id != id) return std::nullopt;
  return erase(base);
}

const allocation* allocation_map::find_live(std::uint64_t address) const {
  const auto it = containing(live_, address);
  return it == live_.end() ? nullptr : &it->second;
}

std::optional<address_hit> allocation_map::find(std::uint64_t address) const {
  if (const auto* a = find_live(address)) return address_hit{*a, address - a->base, false};
  const auto it = containing(freed_, address);
  if (it == freed_.end()) return std::nullopt;
  return address_hit{it->second, address - it->second.base, true};
}

const allocation* allocation_map::find_at(std::uint64_t address, std::uint64_t epoch) const {
  if (const auto* a = find_live(address); a != nullptr && a->born <= epoch) return a;
  const auto it = containing(freed_, address);
  if (it == freed_.end()) return nullptr;
  const allocation& f = it->second;
  return f.born <= epoch && epoch < f.died ? &f : nullptr;
}

void allocation_map::remember_freed(allocation a) {
  a.died = ++epoch_;
  if (freed_capacity_ == 0) return;
  freed_[a.base] = a;
  freed_order_.emplace_back(a.base, a.id);
  while (freed_order_.size() > freed_capacity_) {
    const auto [base, id] = freed_order_.front();
    freed_order_.pop_front();
    // Only evict the entry if a later free of the same base did not replace it.
    if (const auto f = freed_.find(base); f != freed_.end() && f->second.id == id) {
      freed_.erase(f);
    }
  }
}

}  // namespace streamsan::injection
