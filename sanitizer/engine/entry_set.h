// A segment's read set or atomic set (access_history.h): a small array of
// access entries, each on a cache line of its own.
//
// Note [One cache line per stored access]
// An access_entry is 64 bytes, and checking a stored access loads its epoch
// (its first 8 bytes). In a std::vector the entries start wherever malloc
// put the array (16-byte aligned), so three entries in four straddle two
// cache lines, and bounding a read set (Note [Bounded read sets]), which
// reads the epoch and then overwrites the whole entry, touched both. The
// launch path meets a new segment's sets on nearly every access (the
// histories of the live buffers do not fit in L1), so these misses were a
// large share of its cost. Here the array is 64-byte aligned: each entry is
// exactly one line. The set is also 16 bytes instead of 24 (a 32-bit size
// and capacity: a set holds at most one entry per live context), so that a
// segment's bounds, both sets and its last write's epoch share one line
// (access_history::segment, which is now that line alone: Note [The last
// write kept apart] in access_history.h).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "sanitizer/engine/access_entry.h"
#include "sanitizer/engine/line_pool.h"

namespace streamsan {

// access_history moves segments, and their sets with them, as bytes (Note
// [Segments relocate as bytes] in access_history.cpp): a set is its
// storage's pointer and two counts, and nothing may point into a set.
class entry_set {
 public:
  static constexpr std::size_t line = 64;
  static_assert(sizeof(access_entry) == line, "one entry per cache line");

  entry_set() noexcept = default;
  entry_set(const entry_set& other) { assign(other); }
  entry_set(entry_set&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  entry_set& operator=(const entry_set& other) {
    if (this != &other) assign(other);
    return *this;
  }
  entry_set& operator=(entry_set&& other) noexcept {
    if (this != &other) {
      release(data_, capacity_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  ~entry_set() { release(data_, capacity_); }

  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }
  bool empty() const noexcept { return size_ == 0; }

  access_entry* begin() noexcept { return data_; }
  access_entry* end() noexcept { return data_ + size_; }
  const access_entry* begin() const noexcept { return data_; }
  const access_entry* end() const noexcept { return data_ + size_; }
  access_entry& operator[](std::size_t i) noexcept { return data_[i]; }
  const access_entry& operator[](std::size_t i) const noexcept { return data_[i]; }
  access_entry& back() noexcept { return data_[size_ - 1]; }

  void push_back(const access_entry& e) {
    if (size_ == capacity_) [[unlikely]] grow();
    data_[size_++] = e;
  }
  void pop_back() noexcept { --size_; }
  // Keeps the storage: the set fills again after the next write.
  void clear() noexcept { size_ = 0; }

  // What a copy of `from` would be, taking `from`'s storage (and leaving
  // it empty) when that is the storage a copy allocates: a set a segment
  // drops hands its lines on. One with more room than its entries need
  // (a set cleared by a write keeps its lines) is copied, as before: taking
  // those too kept 30 MB more resident on cuSolverRf's trace.
  static entry_set take_or_copy(entry_set& from) {
    const std::uint32_t fitted = from.size_ == 0 ? 0 : std::bit_ceil(from.size_);
    if (from.capacity_ == fitted) return std::move(from);
    return entry_set(from);
  }

  friend bool operator==(const entry_set& a, const entry_set& b) noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  // access_entry is trivially copyable: entries are plain bytes, created by
  // assignment into the storage.
  static_assert(std::is_trivially_copyable_v<access_entry>);
  static_assert(std::is_trivially_destructible_v<access_entry>);

  // Note [Aligned by hand]
  // The alignment comes from a plain allocation one line larger, with the
  // distance back to its start in the byte before the entries (1 to 64).
  // glibc's aligned allocator (operator new with align_val_t) split a larger
  // chunk at every set: about 300 instructions more per set, and the pieces
  // it freed sat in the thread's cache, where mallinfo2 counts them as in
  // use, so BM_EngineMemoryFlatness read 682,080 bytes at 1 M records and
  // 773,616 at 10 M.
  //
  // Note [Read sets from a pool of lines] (line_pool.h): capacities are
  // powers of two, and those of up to line_pool::max_lines come from the
  // pool, without the hand alignment's extra line.
  static access_entry* allocate(std::uint32_t n) {
    if (line_pool::pooled(n)) return static_cast<access_entry*>(line_pool::allocate(n));
    auto* raw =
        static_cast<std::byte*>(::operator new(std::size_t{n} * sizeof(access_entry) + line));
    const std::size_t skip = line - reinterpret_cast<std::uintptr_t>(raw) % line;
    raw[skip - 1] = static_cast<std::byte>(skip);
    return reinterpret_cast<access_entry*>(raw + skip);
  }
  static void release(access_entry* p, std::uint32_t capacity) noexcept {
    if (p == nullptr) return;
    if (line_pool::pooled(capacity)) {
      line_pool::release(p, capacity);
      return;
    }
    auto* entries = reinterpret_cast<std::byte*>(p);
    ::operator delete(entries - std::to_integer<std::size_t>(entries[-1]));
  }
  void assign(const entry_set& other) {
    if (capacity_ < other.size_) {
      const std::uint32_t n = std::bit_ceil(other.size_);
      access_entry* fresh = allocate(n);
      release(data_, capacity_);
      data_ = fresh;
      capacity_ = n;
    }
    std::uninitialized_copy(other.begin(), other.end(), data_);
    size_ = other.size_;
  }
  // Doubles, from one entry: most sets hold one or two.
  [[gnu::noinline]] void grow() {
    const std::uint32_t n = capacity_ == 0 ? 1 : 2 * capacity_;
    access_entry* fresh = allocate(n);
    std::uninitialized_copy(begin(), end(), fresh);
    release(data_, capacity_);
    data_ = fresh;
    capacity_ = n;
  }

  access_entry* data_ = nullptr;
  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = 0;
};

}  // namespace streamsan
