#include "inject/stack/fast_unwinder.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <string_view>
#include <thread>
#include <vector>

namespace streamsan::injection {
namespace {

using frames = std::vector<std::uint64_t>;

struct both {
  frames fast;
  frames slow;
};

// Recursion with frames of different shapes, so that both rsp- and
// rbp-based rules are exercised.
__attribute__((noinline)) both capture_at_depth(int depth, volatile char* pad);

__attribute__((noinline)) both leaf() {
  both b;
  std::array<std::uint64_t, 48> out{};
  b.fast.assign(out.begin(), out.begin() + capture_stack(out));
  b.slow.assign(out.begin(), out.begin() + capture_stack_slow(out));
  return b;
}

__attribute__((noinline)) both with_alloca(int depth) {
  volatile char* pad = static_cast<volatile char*>(__builtin_alloca(64 + depth * 16));
  pad[0] = 1;
  return capture_at_depth(depth - 1, pad);
}

__attribute__((noinline)) both capture_at_depth(int depth, volatile char* pad) {
  if (depth <= 0) return leaf();
  if (depth % 3 == 0) return with_alloca(depth);
  volatile char local[32];
  local[0] = pad ? pad[0] : 0;
  both b = capture_at_depth(depth - 1, local);
  asm volatile("" ::: "memory");
  return b;
}

// The fast walk and _Unwind_Backtrace agree frame for frame below leaf().
TEST(FastUnwinder, AgreesWithUnwindBacktrace) {
  for (int depth : {0, 1, 5, 12}) {
    const both b = capture_at_depth(depth, nullptr);
    ASSERT_GE(b.fast.size(), static_cast<std::size_t>(depth + 3)) << "depth " << depth;
    // The slow capture was taken from the next statement of leaf(): its
    // first frame differs, the callers must not.
    ASSERT_EQ(b.fast.size(), b.slow.size()) << "depth " << depth;
    EXPECT_TRUE(std::equal(b.fast.begin() + 1, b.fast.end(), b.slow.begin() + 1))
        << "depth " << depth;
  }
}

// Note [Realigned frames]: an over-aligned local, stack arguments and alloca
// make GCC realign the frame through a DRAP register, whose CFA in the body
// is an expression (checked below: the slow fallback would hide a wrong
// guess, so the test asks that no capture fell back).
__attribute__((noinline)) both realigned(long a, long b, long c, long d, long e, long f,
                                         long g, long h, int n) {
  alignas(64) volatile char aligned[64];
  aligned[0] = static_cast<char>(a + b + c + d + e + f + g + h);
  volatile char* v = static_cast<volatile char*>(__builtin_alloca(16 + n));
  v[0] = aligned[0];
  both out = capture_at_depth(n, v);
  asm volatile("" ::: "memory");
  return out;
}

TEST(FastUnwinder, FollowsAFrameRealignedThroughADrapRegister) {
  std::thread([] {
    const auto before = current_thread_unwinder_stats();
    const both b = realigned(1, 2, 3, 4, 5, 6, 7, 8, 2);
    const auto after = current_thread_unwinder_stats();
    // One slow capture is the comparison's own.
    EXPECT_EQ(after.slow_captures, before.slow_captures + 1);
    ASSERT_EQ(b.fast.size(), b.slow.size());
    EXPECT_TRUE(std::equal(b.fast.begin() + 1, b.fast.end(), b.slow.begin() + 1));
  }).join();
}

TEST(FastUnwinder, RespectsTheOutputSize) {
  std::array<std::uint64_t, 3> out{};
  EXPECT_EQ(capture_stack(out), 3u);
  EXPECT_EQ(capture_stack(std::span<std::uint64_t>{}), 0u);
}

TEST(FastUnwinder, RulesAreComputedOncePerCallSite) {
  std::thread([] {
    std::array<std::uint64_t, 32> out{};
    capture_stack(out);
    const auto first = current_thread_unwinder_stats();
    for (int i = 0; i < 100; ++i) capture_stack(out);
    const auto later = current_thread_unwinder_stats();
    EXPECT_EQ(later.captures, first.captures + 100);
    // The loop adds at most the rule for its own call site.
    EXPECT_LE(later.rules_computed, first.rules_computed + 1);
    EXPECT_EQ(later.slow_captures, first.slow_captures);
  }).join();
}

TEST(FastUnwinder, HidesInternalModules) {
  // The C library runs main(); marking it internal hides its frames.
  const std::string_view parts[] = {"libc.so"};
  set_internal_modules(parts);
  std::array<std::uint64_t, 32> out{};
  const std::size_t n = capture_stack(out);
  set_internal_modules({});
  std::array<std::uint64_t, 32> again{};
  const std::size_t m = capture_stack(again);
  EXPECT_LT(n, m);
}

// Note [Per-thread state outlives the thread's thread_locals]: memory is
// bounded by the threads alive, however many come and go.
TEST(FastUnwinder, ThreadStatesAreFreedWhenTheirThreadsEnd) {
  std::array<std::uint64_t, 8> out{};
  capture_stack(out);  // this thread's state exists
  const std::size_t before = live_unwinder_states();
  for (int round = 0; round < 4; ++round) {
    std::vector<std::thread> threads;
    for (int i = 0; i < 16; ++i) {
      threads.emplace_back([] {
        std::array<std::uint64_t, 8> frames{};
        EXPECT_GT(capture_stack(frames), 0u);
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(live_unwinder_states(), before) << "round " << round;
  }
}

// STREAMSAN_DEBUG's sum over threads: captures of a thread that ended and
// of one still running are both counted.
TEST(FastUnwinder, AllThreadsStatsCountEndedAndLiveThreads) {
  std::array<std::uint64_t, 8> out{};
  capture_stack(out);
  const auto before = all_threads_unwinder_stats();
  std::thread([] {
    std::array<std::uint64_t, 8> frames{};
    for (int i = 0; i < 3; ++i) capture_stack(frames);
  }).join();
  capture_stack(out);
  const auto after = all_threads_unwinder_stats();
  EXPECT_EQ(after.captures - before.captures, 4u);
}

// A thread_local destructor runs before the key that frees the state: a
// CUDA call made from it (a per-thread handle released at thread exit) is
// captured, and the state is still freed.
struct captures_at_thread_exit {
  std::size_t* frames_seen = nullptr;
  ~captures_at_thread_exit() {
    std::array<std::uint64_t, 8> out{};
    *frames_seen = capture_stack(out);
  }
};

// Note [The unwinder's state in the caller's thread_local]: captures
// through a slot and without one count in the thread's one state, and the
// slot is emptied when the state is freed at thread exit. A key of the
// test's own looks at it then, again in the next round of key destructors
// while the unwinder's key has not run yet.
thread_local unwinder_slot exit_slot;
pthread_key_t slot_watch{};
int slot_watch_rounds = 0;
void* slot_at_exit = &slot_watch;
void watch_slot(void* armed) {
  if (exit_slot.state != nullptr && ++slot_watch_rounds < 3) {
    pthread_setspecific(slot_watch, armed);
    return;
  }
  slot_at_exit = exit_slot.state;
}

TEST(FastUnwinder, ASlotHoldsTheThreadsStateUntilItIsFreed) {
  std::array<std::uint64_t, 8> out{};
  capture_stack(out);  // the unwinder's key is made
  ASSERT_EQ(pthread_key_create(&slot_watch, watch_slot), 0);
  const std::size_t before = live_unwinder_states();
  std::thread([before] {
    std::array<std::uint64_t, 8> frames{};
    const auto start = current_thread_unwinder_stats().captures;
    EXPECT_GT(capture_stack(frames, 0, &exit_slot), 0u);
    EXPECT_NE(exit_slot.state, nullptr);
    capture_stack(frames);
    capture_stack(frames, 0, &exit_slot);
    EXPECT_EQ(current_thread_unwinder_stats().captures, start + 3);
    EXPECT_EQ(live_unwinder_states(), before + 1);
    pthread_setspecific(slot_watch, &exit_slot);
  }).join();
  EXPECT_EQ(slot_at_exit, nullptr);
  EXPECT_EQ(live_unwinder_states(), before);
  pthread_key_delete(slot_watch);
}

TEST(FastUnwinder, CapturesFromThreadLocalDestructors) {
  std::array<std::uint64_t, 8> out{};
  capture_stack(out);
  const std::size_t before = live_unwinder_states();
  std::size_t seen = 0;
  std::thread([&seen] {
    thread_local captures_at_thread_exit at_exit;
    at_exit.frames_seen = &seen;
    std::array<std::uint64_t, 8> frames{};
    capture_stack(frames);
  }).join();
  EXPECT_GT(seen, 0u);
  EXPECT_EQ(live_unwinder_states(), before);
}

using capture_fn = std::size_t (*)(std::span<std::uint64_t> out, std::uint64_t key,
                                   unwinder_slot* slot) noexcept;

}  // namespace
}  // namespace streamsan::injection

extern "C" std::size_t streamsan_test_call_through(int depth,
                                                   streamsan::injection::capture_fn fn,
                                                   std::uint64_t* out, std::size_t size,
                                                   std::uint64_t key);

namespace streamsan::injection {
namespace {

// The application's side: calls "the driver" (the helper), which calls
// capture_stack the way CUPTI calls the library.
__attribute__((noinline)) frames through_helper(int depth, std::uint64_t key) {
  std::array<std::uint64_t, 32> out{};
  const std::size_t n =
      streamsan_test_call_through(depth, &capture_stack, out.data(), out.size(), key);
  asm volatile("" ::: "memory");
  return frames(out.begin(), out.begin() + n);
}

// through_helper from one of two call sites, at one stack depth: the walks
// differ in one word, the return address into this function.
volatile int site_sink = 0;
__attribute__((noinline)) frames from_site(bool second, std::uint64_t key) {
  frames f;
  if (second) {
    site_sink = 1;
    f = through_helper(6, key);
    site_sink = 2;
  } else {
    site_sink = 3;
    f = through_helper(6, key);
    site_sink = 4;
  }
  return f;
}

// "The driver" called from one of two call sites in one frame: the walks
// start from the same stack address and differ in the first return address
// shown, which no walk reads (the path cache's slot holds it).
__attribute__((noinline)) frames into_helper_from(bool second, std::uint64_t key) {
  std::array<std::uint64_t, 32> out{};
  std::size_t n = 0;
  if (second) {
    site_sink = 5;
    n = streamsan_test_call_through(6, &capture_stack, out.data(), out.size(), key);
    site_sink = 6;
  } else {
    site_sink = 7;
    n = streamsan_test_call_through(6, &capture_stack, out.data(), out.size(), key);
    site_sink = 8;
  }
  return frames(out.begin(), out.begin() + n);
}

// through_helper from one more frame of its own, which moves the stack
// address the capture starts from.
__attribute__((noinline)) frames through_helper_deeper(int depth, std::uint64_t key) {
  volatile char pad[200];
  pad[0] = static_cast<char>(depth);
  frames f = through_helper(depth, key);
  asm volatile("" ::: "memory");
  if (pad[0] != static_cast<char>(depth)) f.clear();
  return f;
}

class PathCache : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string_view parts[] = {"libstreamsan_unwind_helper"};
    set_internal_modules(parts);
  }
  void TearDown() override { set_internal_modules({}); }
};

TEST_F(PathCache, HelperFramesAreHidden) {
  const frames shallow = through_helper(3, 0);
  const frames deep = through_helper(12, 0);
  ASSERT_GE(shallow.size(), 2u);
  // The first frame shown is the application's call into the helper.
  EXPECT_EQ(shallow.size(), deep.size());
  EXPECT_EQ(shallow[0], deep[0]);
}

TEST_F(PathCache, SecondCaptureOnAPathJumpsAndAgrees) {
  const frames plain = through_helper(6, 0);
  const auto before = current_thread_unwinder_stats();
  const frames learned = through_helper(6, 42);
  const frames jumped = through_helper(6, 42);
  const auto after = current_thread_unwinder_stats();
  EXPECT_EQ(after.path_hits, before.path_hits + 1);
  EXPECT_EQ(after.path_misses, before.path_misses);
  // Same frames; only the callers of through_helper (three call sites in
  // this test) differ.
  ASSERT_EQ(learned.size(), plain.size());
  ASSERT_EQ(jumped.size(), plain.size());
  EXPECT_EQ(learned[0], plain[0]);
  EXPECT_EQ(jumped[0], plain[0]);
  EXPECT_TRUE(std::equal(jumped.begin() + 2, jumped.end(), plain.begin() + 2));
}

TEST_F(PathCache, AnotherPathUnderTheSameKeyIsDetectedAndRelearned) {
  through_helper(4, 77);  // learn
  const auto before = current_thread_unwinder_stats();
  const frames other = through_helper(9, 77);  // same key, deeper path
  const auto after = current_thread_unwinder_stats();
  const frames plain = through_helper(9, 0);
  EXPECT_EQ(after.path_misses, before.path_misses + 1);
  ASSERT_EQ(other.size(), plain.size());
  EXPECT_EQ(other[0], plain[0]);
  EXPECT_TRUE(std::equal(other.begin() + 2, other.end(), plain.begin() + 2));
}

// The reverse: a deeper path learned first puts the cached slot inside the
// application's own frames on the shallower path, where a return address
// into the application may lie (here it happens not to, so the first check
// alone already refuses it); the return address below it, into the helper
// when learned, is checked too (Note [Launches without their runtime
// callback]: the program's cuLaunchKernel after the runtime's).
TEST_F(PathCache, AShallowerPathUnderADeeperPathsKeyIsDetected) {
  through_helper(9, 78);  // learn the deep path
  const auto before = current_thread_unwinder_stats();
  const frames other = through_helper(4, 78);
  const auto after = current_thread_unwinder_stats();
  const frames plain = through_helper(4, 0);
  EXPECT_EQ(after.path_misses, before.path_misses + 1);
  EXPECT_EQ(after.path_hits, before.path_hits);
  ASSERT_EQ(other.size(), plain.size());
  EXPECT_EQ(other[0], plain[0]);
  EXPECT_TRUE(std::equal(other.begin() + 2, other.end(), plain.begin() + 2));
}

// Note [A repeated walk is read back]. A walk also compares the saved
// rbps it reads, which a caller may have used for data, so a repeat is not
// read back every time: at least once in a few.
TEST_F(PathCache, ARepeatedWalkIsReadBackAndAgrees) {
  std::array<frames, 6> got;
  const auto before = current_thread_unwinder_stats();
  for (auto& f : got) f = from_site(false, 91);  // one call site
  const auto after = current_thread_unwinder_stats();
  EXPECT_GE(after.walks_read_back, before.walks_read_back + 1);
  EXPECT_EQ(after.path_hits, before.path_hits + 5);
  ASSERT_GE(got[0].size(), 3u);
  for (const auto& f : got) EXPECT_EQ(f, got[0]);
}

// Each walk read back agrees with a whole walk (key 0: neither the path
// cache nor a memo) made beside it; only the return address into this test
// (frame 2: the two calls' own sites) differs.
TEST_F(PathCache, WalksReadBackAgreeWithWholeWalks) {
  const auto before = current_thread_unwinder_stats();
  for (int i = 0; i < 8; ++i) {
    const frames read_back = from_site(false, 95);
    const frames whole = from_site(false, 0);
    ASSERT_EQ(read_back.size(), whole.size());
    ASSERT_GE(whole.size(), 4u);
    EXPECT_EQ(read_back[0], whole[0]);
    EXPECT_EQ(read_back[1], whole[1]);
    EXPECT_TRUE(std::equal(read_back.begin() + 3, read_back.end(), whole.begin() + 3));
  }
  EXPECT_GE(current_thread_unwinder_stats().walks_read_back, before.walks_read_back + 1);
}

// Seven captures under `key` through `from`, from one of its call sites and
// the last from the other, each with this thread's counters after it.
struct seven_walks {
  std::array<frames, 7> got;
  std::array<unwinder_stats, 7> stats;
};
seven_walks last_from_the_other_site(frames (*from)(bool, std::uint64_t), std::uint64_t key) {
  seven_walks w;
  for (int i = 0; i < 7; ++i) {
    w.got[i] = from(i == 6, key);
    w.stats[i] = current_thread_unwinder_stats();
  }
  return w;
}

// Note [A memo per start]: two call chains under one key, from two stack
// addresses, taking turns: each is read back from its own memo.
__attribute__((noinline)) frames near_or_far(bool far, std::uint64_t key) {
  return far ? through_helper_deeper(6, key) : through_helper(6, key);
}

TEST_F(PathCache, TwoChainsTakingTurnsAreEachReadBack) {
  // The arguments come from volatiles: with constants, a release build
  // clones near_or_far for them (IPA-CP), and the clone's return addresses
  // are not those of the copy the loop calls.
  volatile bool near = false, far = true;
  volatile std::uint64_t whole_key = 0, key = 97;
  const frames whole[2] = {near_or_far(near, whole_key), near_or_far(far, whole_key)};
  std::array<frames, 16> got;
  unwinder_stats before;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (i == 4) before = current_thread_unwinder_stats();  // both chains recorded
    got[i] = near_or_far(i % 2 == 1, key);
  }
  const auto after = current_thread_unwinder_stats();
  EXPECT_EQ(after.walks_read_back, before.walks_read_back + got.size() - 4);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const frames& w = whole[i % 2];
    ASSERT_EQ(got[i].size(), w.size());
    // Only the return address into this test differs (another call site):
    // the frame after through_helper's caller(s).
    const std::size_t site = i % 2 == 1 ? 3 : 2;
    ASSERT_GT(w.size(), site);
    EXPECT_TRUE(std::equal(got[i].begin(), got[i].begin() + site, w.begin()));
    EXPECT_TRUE(std::equal(got[i].begin() + site + 1, got[i].end(), w.begin() + site + 1));
  }
}

TEST_F(PathCache, AWalkThatReadsOneOtherWordIsWalkedAgain) {
  const auto [got, stats] = last_from_the_other_site(from_site, 92);
  ASSERT_GE(stats[5].walks_read_back, stats[0].walks_read_back + 1);
  EXPECT_EQ(stats[6].walks_read_back, stats[5].walks_read_back);  // walked
  EXPECT_EQ(stats[6].path_hits, stats[5].path_hits + 1);          // from the same start
  ASSERT_EQ(got[6].size(), got[5].size());
  ASSERT_GE(got[6].size(), 3u);
  EXPECT_EQ(got[6][0], got[5][0]);
  EXPECT_NE(got[6][1], got[5][1]);  // the other call site in from_site
  EXPECT_TRUE(std::equal(got[6].begin() + 2, got[6].end(), got[5].begin() + 2));
}

// Note [A walk read back before its resume]: a capture from the memo's
// stack address under the memo's path, but from another call site into the
// driver, is not the memo's walk.
TEST_F(PathCache, AnotherCallSiteIntoTheDriverIsNotReadBack) {
  const auto [got, stats] = last_from_the_other_site(into_helper_from, 96);
  // Key 0: whole walks. Only the return address into this test (frame 2)
  // differs.
  const frames whole = last_from_the_other_site(into_helper_from, 0).got[6];
  ASSERT_GE(stats[5].walks_read_back, stats[0].walks_read_back + 1);
  EXPECT_EQ(stats[6].walks_read_back, stats[5].walks_read_back);
  ASSERT_EQ(got[6].size(), whole.size());
  ASSERT_GE(whole.size(), 4u);
  EXPECT_NE(got[6][0], got[5][0]);
  EXPECT_EQ(got[6][0], whole[0]);
  EXPECT_EQ(got[6][1], whole[1]);
  EXPECT_TRUE(std::equal(got[6].begin() + 3, got[6].end(), whole.begin() + 3));
}

// Walks that keep differing are recorded only now and then; once the
// path settles, its walk is recorded and read back again.
TEST_F(PathCache, APathThatSettlesIsReadBackAgain) {
  for (int i = 0; i < 12; ++i) from_site(i % 2 == 0, 94);  // every walk differs
  const auto settling = current_thread_unwinder_stats();
  std::array<frames, 20> got;
  for (auto& f : got) f = from_site(false, 94);
  const auto settled = current_thread_unwinder_stats();
  EXPECT_GE(settled.walks_read_back, settling.walks_read_back + 1);
  EXPECT_LT(settled.walks_read_back, settling.walks_read_back + 19);  // not at once
  for (const auto& f : got) EXPECT_EQ(f, got[0]);
}

TEST_F(PathCache, AWalkIntoAnotherOutputSizeIsWalkedAgain) {
  std::array<std::uint64_t, 32> out{};
  streamsan_test_call_through(6, &capture_stack, out.data(), 8, 93);  // learn
  for (int i = 0; i < 2; ++i) streamsan_test_call_through(6, &capture_stack, out.data(), 8, 93);
  const auto before = current_thread_unwinder_stats();
  const std::size_t n = streamsan_test_call_through(6, &capture_stack, out.data(), 3, 93);
  const auto after = current_thread_unwinder_stats();
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(after.walks_read_back, before.walks_read_back);
}

}  // namespace
}  // namespace streamsan::injection
