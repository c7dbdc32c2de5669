#include "sanitizer/engine/line_pool.h"

#include <pthread.h>

#include <array>
#include <atomic>
#include <bit>
#include <mutex>
#include <new>
#include <thread>
#include <type_traits>

namespace streamsan::line_pool {
namespace {

constexpr std::size_t sizes = 4;  // 1, 2, 4 and 8 lines
constexpr std::size_t slab_bytes = 256 * 1024;

struct free_block {
  free_block* next;        // in a thread's list, or in a chain
  free_block* next_chain;  // a chain's first block: the depot's next chain
  std::uint32_t count;     // a chain's first block: the blocks in the chain
};
static_assert(sizeof(free_block) <= line);

// Plain values only: a thread_local with no constructor or destructor
// costs no guard on each use.
struct thread_lists {
  std::array<free_block*, sizes> free{};
  std::array<std::uint32_t, sizes> free_count{};
  std::array<std::byte*, sizes> bump{};
  std::array<std::byte*, sizes> bump_end{};
  bool exit_hook = false;  // the thread's exit gives all of it to the depot
};
constinit thread_local thread_lists lists{};

// Note [Blocks freed on another thread go round]
// One thread may take the blocks and another free them (the engine runs on
// the program's threads under halt_on_error, one at a time): the freeing
// thread's list would then grow for ever while the taking thread cut new
// slabs. So a list past twice `batch` hands `batch` blocks to a depot of
// chains, and a thread whose list is empty takes a chain from it before it
// cuts a slab. A thread that ends gives the depot its lists and the rest of
// its slabs, cut into blocks (a pthread key's destructor, set at its first
// use of the pool), so threads that come and go leave nothing behind. The
// depot's lock is only tried: a thread that finds it held (or a forked
// child whose parent's other thread held it) keeps its blocks or cuts a
// slab, and never waits; an ending thread tries for a while, then leaves
// its blocks.
constexpr std::uint32_t batch = 1024;
struct depot {
  std::mutex mutex;
  // Each chain is `batch` blocks through `next`, its first block linking
  // the next chain.
  std::array<free_block*, sizes> chains{};
};
// Constant-initialized, with nothing to destroy: threads free into it until
// the process ends.
constinit depot the_depot{};
static_assert(std::is_trivially_destructible_v<std::mutex>);

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

void give_all_at_exit(void*) noexcept;

pthread_key_t exit_key() noexcept {
  static const pthread_key_t key = [] {
    pthread_key_t k{};
    ::pthread_key_create(&k, give_all_at_exit);
    return k;
  }();
  return key;
}

// At the thread's first use of the pool.
[[gnu::noinline]] void hook_thread_exit() noexcept {
  lists.exit_hook = true;
  ::pthread_setspecific(exit_key(), &lists);
}

void push_chain_locked(std::size_t index, free_block* first, std::uint32_t count) {
  first->count = count;
  first->next_chain = the_depot.chains[index];
  the_depot.chains[index] = first;
}

// The ending thread's lists and the untouched rest of its slabs.
void give_all_at_exit(void*) noexcept {
  // A bounded wait: in a forked child the lock may be held by a thread
  // that is not there, and then the blocks stay where they are.
  std::unique_lock lock(the_depot.mutex, std::try_to_lock);
  for (int tries = 0; !lock.owns_lock() && tries < 10'000; ++tries) {
    std::this_thread::yield();
    lock.try_lock();
  }
  if (!lock.owns_lock()) return;
  for (std::size_t index = 0; index < sizes; ++index) {
    const std::size_t bytes = (std::size_t{1} << index) * line;
    std::uint32_t count = lists.free_count[index];
    free_block* first = lists.free[index];
    while (static_cast<std::size_t>(lists.bump_end[index] - lists.bump[index]) >= bytes) {
      auto* b = reinterpret_cast<free_block*>(lists.bump[index]);
      lists.bump[index] += bytes;
      b->next = first;
      first = b;
      ++count;
    }
    if (first != nullptr) push_chain_locked(index, first, count);
    lists.free[index] = nullptr;
    lists.free_count[index] = 0;
  }
  // A later destructor that uses the pool hooks the thread again.
  lists.exit_hook = false;
}

// A chain from the depot becomes the thread's list (Note [Blocks freed on
// another thread go round]); false when there is none or the lock is held.
bool take_chain(std::size_t index) noexcept {
  std::unique_lock lock(the_depot.mutex, std::try_to_lock);
  if (!lock.owns_lock() || the_depot.chains[index] == nullptr) return false;
  free_block* first = the_depot.chains[index];
  the_depot.chains[index] = first->next_chain;
  lock.unlock();
  lists.free[index] = first;
  lists.free_count[index] = first->count;
  return true;
}

// The first `batch` blocks of the thread's list go to the depot (unless its
// lock is held: then they stay, and the next release tries again).
void give_chain(std::size_t index) noexcept {
  std::unique_lock lock(the_depot.mutex, std::try_to_lock);
  if (!lock.owns_lock()) return;
  free_block* first = lists.free[index];
  free_block* last = first;
  for (std::uint32_t i = 1; i < batch; ++i) last = last->next;
  lists.free[index] = last->next;
  lists.free_count[index] -= batch;
  last->next = nullptr;
  push_chain_locked(index, first, batch);
}

}  // namespace

void* allocate(std::uint32_t lines) {
  const std::size_t index = size_index(lines);
  if (free_block* b = lists.free[index]) {
    lists.free[index] = b->next;
    --lists.free_count[index];
    return b;
  }
  if (!lists.exit_hook) hook_thread_exit();
  if (take_chain(index)) return allocate(lines);
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
  if (!lists.exit_hook) [[unlikely]] hook_thread_exit();
  if (++lists.free_count[index] > 2 * batch) give_chain(index);
}

std::size_t slab_count() noexcept {
  std::size_t n = 0;
  for (const slab_link* s = slabs.load(std::memory_order_acquire); s != nullptr; s = s->next) ++n;
  return n;
}

}  // namespace streamsan::line_pool
