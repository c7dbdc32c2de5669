#include "sanitizer/engine/line_pool.h"

#include <array>
#include <atomic>
#include <bit>
#include <new>

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

// Every slab, so that leak checkers see them reachable (Note [Read sets
// from a pool of lines]): a list through each slab's first line, pushed
// without a lock, so that a fork while another thread takes a slab leaves
// the child nothing held.
struct slab_link {
  slab_link* next;
};
constinit std::atomic<slab_link*> slabs{nullptr};

std::size_t size_index(std::uint32_t lines) noexcept {
  return static_cast<std::size_t>(std::countr_zero(lines));
}

[[gnu::noinline]] void new_slab(std::size_t index) {
  auto* slab = static_cast<std::byte*>(::operator new(slab_bytes, std::align_val_t{line}));
  auto* link = reinterpret_cast<slab_link*>(slab);
  link->next = slabs.load(std::memory_order_relaxed);
  while (!slabs.compare_exchange_weak(link->next, link, std::memory_order_release,
                                      std::memory_order_relaxed)) {
  }
  // The first line holds the link.
  lists.bump[index] = slab + line;
  lists.bump_end[index] = slab + slab_bytes;
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
  std::size_t n = 0;
  for (const slab_link* s = slabs.load(std::memory_order_acquire); s != nullptr; s = s->next) ++n;
  return n;
}

}  // namespace streamsan::line_pool
