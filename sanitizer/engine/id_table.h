// A map from one of our strong ids to an owned object, for the hot path.
//
// Note [Paged id tables]
// Producers hand out ids from counters (ids.h), so the live ids of a kind are
// dense-ish integers: a vector indexed by id makes a lookup one load. But
// allocation ids churn (a caching allocator gives every tensor a new block
// id) while the live set stays small, so a flat vector would grow with every
// allocation ever made. The table is therefore paged: pages of 256 slots,
// released when their last object is erased; the page directory costs 8
// bytes per 256 ids ever used. An id far beyond the ids seen so far (a
// corrupt trace) goes to a hash map instead of growing the directory.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sanitizer/log/ids.h"

namespace streamsan {

template <class Id, class T>
class id_table {
 public:
  T* find(Id id) const noexcept {
    const std::uint32_t r = raw(id);
    const std::uint32_t p = r >> page_bits;
    if (p < pages_.size()) {
      const page* pg = pages_[p].get();
      if (pg != nullptr) {
        if (T* item = pg->items[r & page_mask].get()) return item;
      }
    }
    // An id that was far out when it was inserted stays in far_ even after
    // the pages grow past it.
    if (far_.empty()) return nullptr;
    const auto it = far_.find(r);
    return it == far_.end() ? nullptr : it->second.get();
  }

  // Inserts a default-constructed object, or returns the existing one.
  T& get_or_insert(Id id) {
    const std::uint32_t r = raw(id);
    const std::uint32_t p = r >> page_bits;
    if (!far_.empty()) {
      if (const auto it = far_.find(r); it != far_.end()) return *it->second;
    }
    if (p >= pages_.size()) {
      if (p > 2 * pages_.size() + far_page_slack) {
        auto& slot = far_[r];
        if (!slot) {
          slot = std::make_unique<T>();
          ++size_;
        }
        return *slot;
      }
      pages_.resize(std::size_t{p} + 1);
    }
    auto& pg = pages_[p];
    if (!pg) pg = std::make_unique<page>();
    auto& slot = pg->items[r & page_mask];
    if (!slot) {
      slot = make_object();
      ++pg->count;
      ++size_;
    }
    return *slot;
  }

  void erase(Id id) noexcept {
    const std::uint32_t r = raw(id);
    const std::uint32_t p = r >> page_bits;
    if (!far_.empty() && far_.erase(r) != 0) {
      --size_;
      return;
    }
    if (p < pages_.size()) {
      auto& pg = pages_[p];
      if (!pg) return;
      auto& slot = pg->items[r & page_mask];
      if (!slot) return;
      recycle(std::move(slot));
      --size_;
      if (--pg->count == 0) pg.reset();
    }
  }

  std::size_t size() const noexcept { return size_; }

  // Visits (id, object) in no particular order.
  template <class F>
  void for_each(F&& f) const {
    visit(*this, f);
  }
  template <class F>
  void for_each(F&& f) {
    visit(*this, f);
  }

 private:
  template <class Self, class F>
  static void visit(Self& self, F& f) {
    using ref = std::conditional_t<std::is_const_v<Self>, const T&, T&>;
    for (std::size_t p = 0; p < self.pages_.size(); ++p) {
      if (!self.pages_[p]) continue;
      for (std::uint32_t i = 0; i < page_size; ++i) {
        if (const auto& item = self.pages_[p]->items[i]) {
          f(Id{static_cast<std::uint32_t>((p << page_bits) | i)}, static_cast<ref>(*item));
        }
      }
    }
    for (const auto& [r, item] : self.far_) f(Id{r}, static_cast<ref>(*item));
  }

  // Note [Recycled objects]
  // Allocation ids churn at every tensor (Note [Paged id tables]), so every
  // block made and forgotten cost an allocation and a free of its object.
  // An erased object is destroyed and made again in its storage at once (a
  // default object, holding nothing: whatever it held is freed as before)
  // and kept for the next insert, a few at most.
  std::unique_ptr<T> make_object() {
    if (spare_.empty()) return std::make_unique<T>();
    std::unique_ptr<T> object = std::move(spare_.back());
    spare_.pop_back();
    return object;
  }
  void recycle(std::unique_ptr<T> object) noexcept {
    if constexpr (std::is_nothrow_default_constructible_v<T>) {
      if (spare_.size() < max_spare && spare_.capacity() > spare_.size()) {
        T* p = object.get();
        std::destroy_at(p);
        std::construct_at(p);
        spare_.push_back(std::move(object));
      }
    }
  }

  static constexpr std::size_t max_spare = 16;
  static constexpr unsigned page_bits = 8;
  static constexpr std::uint32_t page_size = 1u << page_bits;
  static constexpr std::uint32_t page_mask = page_size - 1;
  static constexpr std::size_t far_page_slack = 1u << 12;  // 1M ids

  struct page {
    std::array<std::unique_ptr<T>, page_size> items;
    std::uint32_t count = 0;
  };

  std::vector<std::unique_ptr<page>> pages_;
  std::unordered_map<std::uint32_t, std::unique_ptr<T>> far_;
  std::size_t size_ = 0;
  std::vector<std::unique_ptr<T>> spare_ = [] {
    std::vector<std::unique_ptr<T>> v;
    v.reserve(max_spare);
    return v;
  }();
};

}  // namespace streamsan
