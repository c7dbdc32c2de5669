// Note [Read sets from a pool of lines] (sanitizer/engine/line_pool.h).
#include "sanitizer/engine/line_pool.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

namespace streamsan {
namespace {

using block = std::pair<std::uintptr_t, std::uintptr_t>;  // [begin, end)

block span_of(void* p, std::uint32_t lines) {
  const auto b = reinterpret_cast<std::uintptr_t>(p);
  return {b, b + lines * line_pool::line};
}

TEST(LinePool, ServesOneToEightLinesAndLeavesTheRestToTheCaller) {
  if (!line_pool::pooled(1)) GTEST_SKIP() << "AddressSanitizer: every set from malloc";
  for (std::uint32_t lines : {1u, 2u, 4u, 8u}) EXPECT_TRUE(line_pool::pooled(lines)) << lines;
  EXPECT_FALSE(line_pool::pooled(0));
  EXPECT_FALSE(line_pool::pooled(16));
}

TEST(LinePool, BlocksAreAlignedToALineAndNeverOverlap) {
  if (!line_pool::pooled(1)) GTEST_SKIP() << "AddressSanitizer: every set from malloc";
  std::vector<std::pair<void*, std::uint32_t>> taken;
  std::vector<block> spans;
  for (int round = 0; round < 200; ++round) {
    for (std::uint32_t lines : {1u, 2u, 4u, 8u}) {
      void* p = line_pool::allocate(lines);
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(p) % line_pool::line, 0u);
      std::memset(p, round & 0xff, lines * line_pool::line);  // all of it is ours
      taken.emplace_back(p, lines);
      spans.push_back(span_of(p, lines));
    }
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i) {
    ASSERT_LE(spans[i - 1].second, spans[i].first) << "blocks " << i - 1 << " and " << i;
  }
  for (const auto& [p, lines] : taken) line_pool::release(p, lines);
}

TEST(LinePool, AReleasedBlockIsTakenAgainBeforeANewOne) {
  if (!line_pool::pooled(1)) GTEST_SKIP() << "AddressSanitizer: every set from malloc";
  void* a = line_pool::allocate(2);
  void* b = line_pool::allocate(2);
  line_pool::release(a, 2);
  EXPECT_EQ(line_pool::allocate(2), a);
  // Another size does not take it.
  line_pool::release(a, 2);
  void* c = line_pool::allocate(4);
  EXPECT_NE(c, a);
  EXPECT_EQ(line_pool::allocate(2), a);
  for (void* p : {a, b}) line_pool::release(p, 2);
  line_pool::release(c, 4);
}

TEST(LinePool, ABlockFreedOnAnotherThreadServesThatThread) {
  if (!line_pool::pooled(1)) GTEST_SKIP() << "AddressSanitizer: every set from malloc";
  void* p = line_pool::allocate(1);
  void* again = nullptr;
  std::thread([&] {
    line_pool::release(p, 1);
    again = line_pool::allocate(1);
    line_pool::release(again, 1);
  }).join();
  EXPECT_EQ(again, p);
}

TEST(LinePool, FreedSetsAreReusedNotGrown) {
  if (!line_pool::pooled(1)) GTEST_SKIP() << "AddressSanitizer: every set from malloc";
  // Churn on a thread of its own, so that its lists start empty.
  std::thread([] {
    std::vector<void*> live;
    for (int i = 0; i < 1000; ++i) live.push_back(line_pool::allocate(1));
    for (void* p : live) line_pool::release(p, 1);
    const std::size_t slabs = line_pool::slab_count();
    for (int round = 0; round < 100; ++round) {
      live.clear();
      for (int i = 0; i < 1000; ++i) live.push_back(line_pool::allocate(1));
      for (void* p : live) line_pool::release(p, 1);
    }
    EXPECT_EQ(line_pool::slab_count(), slabs);
  }).join();
}

TEST(LinePool, AForkedChildTakesSlabsWhileAnotherThreadTakesThem) {
  if (!line_pool::pooled(1)) GTEST_SKIP() << "AddressSanitizer: every set from malloc";
  std::atomic<bool> done{false};
  std::thread taker([&] {
    // 8-line blocks: a new slab every few hundred.
    std::vector<void*> taken;
    while (!done.load()) {
      taken.push_back(line_pool::allocate(8));
      if (taken.size() == 4096) {
        for (void* p : taken) line_pool::release(p, 8);
        taken.clear();
      }
    }
    for (void* p : taken) line_pool::release(p, 8);
  });
  for (int round = 0; round < 20; ++round) {
    const pid_t child = ::fork();
    ASSERT_NE(child, -1);
    if (child == 0) {
      ::alarm(5);  // a lock left held: killed by SIGALRM, not a hung test
      for (int i = 0; i < 2048; ++i) line_pool::allocate(8);  // new slabs
      ::_exit(line_pool::slab_count() > 0 ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "round " << round << ": status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  done = true;
  taker.join();
}

// Note [Blocks freed on another thread go round]
TEST(LinePool, BlocksOneThreadTakesAndAnotherFreesAreReused) {
  if (!line_pool::pooled(1)) GTEST_SKIP() << "AddressSanitizer: every set from malloc";
  constexpr int rounds = 100;
  constexpr int per_round = 4096;  // a slab of one-line blocks each round
  std::size_t slabs_after_warm_up = 0;
  std::thread taker([&] {
    for (int round = 0; round < rounds; ++round) {
      std::vector<void*> taken;
      for (int i = 0; i < per_round; ++i) taken.push_back(line_pool::allocate(1));
      // Freed on a thread of their own.
      std::thread([&] {
        for (void* p : taken) line_pool::release(p, 1);
      }).join();
      if (round == 4) slabs_after_warm_up = line_pool::slab_count();
    }
  });
  taker.join();
  // Without the depot the freeing threads kept every block: each round
  // cut at least one more slab.
  EXPECT_LE(line_pool::slab_count(), slabs_after_warm_up + 4);
}

TEST(LinePool, ThreadsThatComeAndGoLeaveTheirBlocksBehindForOthers) {
  if (!line_pool::pooled(1)) GTEST_SKIP() << "AddressSanitizer: every set from malloc";
  const auto a_thread_uses_the_pool = [] {
    std::thread([] {
      std::vector<void*> taken;
      for (int i = 0; i < 100; ++i) taken.push_back(line_pool::allocate(2));
      for (void* p : taken) line_pool::release(p, 2);
    }).join();
  };
  a_thread_uses_the_pool();
  const std::size_t slabs = line_pool::slab_count();
  // Each would cut a slab of its own, and leave it, without the depot.
  for (int i = 0; i < 50; ++i) a_thread_uses_the_pool();
  EXPECT_LE(line_pool::slab_count(), slabs + 1);
}

}  // namespace
}  // namespace streamsan
