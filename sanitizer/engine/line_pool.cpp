#include "sanitizer/engine/line_pool.h"

#include <array>
#include <bit>
#include <mutex>
#include <new>
#include <vector>

namespace streamsan::line_pool {
namespace {

constexpr std::size_t sizes = 4;  // 1, 2, 4 and 8 lines
constexpr std::size_t slab_bytes = 256 * 1024;

struct free_block {
  free_block* next;
};

// Plain pointers only: a thread_local with no constructor or destructor
// costs no guard on each use.
struct thread_lists {
  std::array<free_block*, sizes> free{};
  std::array<std::byte*, sizes> bump{};
  std::array<std::byte*, sizes> bump_end{};
};
constinit thread_local thread_lists lists{};

// Every slab, so that they stay reachable (Note [Read sets from a pool of
// lines]); never destroyed, as a thread may still free into a slab at exit.
std::mutex& slabs_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::vector<void*>& slabs() {
  static auto* s = new std::vector<void*>;
  return *s;
}

std::size_t size_index(std::uint32_t lines) noexcept {
  return static_cast<std::size_t>(std::countr_zero(lines));
}

[[gnu::noinline]] void new_slab(std::size_t index) {
  void* slab = ::operator new(slab_bytes, std::align_val_t{line});
  {
    std::lock_guard lock(slabs_mutex());
    try {
      slabs().push_back(slab);
    } catch (...) {
      ::operator delete(slab, std::align_val_t{line});
      throw;
    }
  }
  lists.bump[index] = static_cast<std::byte*>(slab);
  lists.bump_end[index] = static_cast<std::byte*>(slab) + slab_bytes;
}

}  // namespace

void* allocate(std::uint32_t lines) {
  const std::size_t index = size_index(lines);
  if (free_block* b = lists.free[index]) {
    lists.free[index] = b->next;
    return b;
  }
  const std::size_t bytes = std::size_t{lines} * line;
  if (static_cast<std::size_t>(lists.bump_end[index] - lists.bump[index]) < bytes) {
    new_slab(index);
  }
  std::byte* block = lists.bump[index];
  lists.bump[index] += bytes;
  return block;
}

void release(void* block, std::uint32_t lines) noexcept {
  const std::size_t index = size_index(lines);
  auto* b = static_cast<free_block*>(block);
  b->next = lists.free[index];
  lists.free[index] = b;
}

std::size_t slab_count() noexcept {
  std::lock_guard lock(slabs_mutex());
  return slabs().size();
}

}  // namespace streamsan::line_pool
