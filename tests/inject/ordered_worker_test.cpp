// The decoding thread's worker (Note [Decoded on a thread of its own] in
// inject/sanitizer_api/launch_tracker.cpp): jobs run one at a time, in the
// order handed over, off the caller's thread.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "inject/sanitizer_api/ordered_worker.h"

namespace streamsan::sanitizer_api {
namespace {

TEST(OrderedWorker, RunsJobsInTheOrderHandedOverOffTheCallersThread) {
  std::vector<int> order;
  std::vector<std::thread::id> threads;
  ordered_worker w;
  for (int i = 0; i < 100; ++i) {
    w.submit([&, i] {
      order.push_back(i);
      threads.push_back(std::this_thread::get_id());
    });
  }
  w.wait_idle();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  for (const auto id : threads) EXPECT_NE(id, std::this_thread::get_id());
  EXPECT_EQ(w.pending(), 0u);
}

TEST(OrderedWorker, WaitIdleWaitsForTheRunningJob) {
  std::atomic<bool> release{false};
  std::atomic<bool> finished{false};
  ordered_worker w;
  w.submit([&] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    finished = true;
  });
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(w.pending(), 1u);
    release = true;
  });
  w.wait_idle();
  EXPECT_TRUE(finished.load());
  releaser.join();
}

// The last resort (Note [A decoding job that throws] in launch_tracker.cpp):
// what escapes a job is counted and its message kept, and the next job runs.
TEST(OrderedWorker, AJobThatThrowsIsCountedAndDoesNotStopTheOthers) {
  int ran = 0;
  ordered_worker w;
  EXPECT_EQ(w.failures(), 0u);
  EXPECT_EQ(w.first_failure(), "");
  w.submit([] { throw std::runtime_error("a job failed"); });
  w.submit([&] { ++ran; });
  w.submit([] { throw 7; });
  w.wait_idle();
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(w.failures(), 2u);
  EXPECT_EQ(w.first_failure(), "a job failed");
}

TEST(OrderedWorker, AJobRunHereThatThrowsIsCountedTheSameWay) {
  ordered_worker w;
  auto job = [] { throw 7; };
  w.run_here(job);
  EXPECT_EQ(w.failures(), 1u);
  EXPECT_EQ(w.first_failure(), "an exception that is not a std::exception");
}

// A forked child has no copy of the thread (Note [A forked child has none
// of our threads]): its jobs run at once on the caller, through the same
// last resort. The child's exit status says what it saw.
TEST(OrderedWorker, InAForkedChildJobsRunOnTheCallerAndThrowsAreCounted) {
  ordered_worker w;
  w.submit([] {});
  w.wait_idle();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const auto caller = std::this_thread::get_id();
    bool here = false;
    w.submit([&] { here = std::this_thread::get_id() == caller; });
    w.submit([] { throw std::runtime_error("in the child"); });
    w.wait_idle();  // returns at once: nothing is queued for a thread
    std::_Exit(here && w.failures() == 1 && w.first_failure() == "in the child" ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(w.failures(), 0u);
}

TEST(OrderedWorker, DestructionRunsWhatWasHandedOver) {
  std::atomic<int> ran{0};
  {
    ordered_worker w;
    for (int i = 0; i < 50; ++i) {
      w.submit([&] {
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        ++ran;
      });
    }
  }
  EXPECT_EQ(ran.load(), 50);
}

// A drain's wait_idle on one thread while another thread's poll hands over
// the first job (which starts the thread and names its process): under the
// TSan pass this raced on the owner's pid before it was atomic.
TEST(OrderedWorker, WaitingWhileAnotherThreadHandsOverTheFirstJob) {
  for (int round = 0; round < 20; ++round) {
    ordered_worker w;
    std::atomic<bool> go{false};
    std::atomic<bool> ran{false};
    std::thread waiter([&] {
      while (!go) std::this_thread::yield();
      for (int i = 0; i < 2000; ++i) w.wait_idle();
    });
    std::thread submitter([&] {
      while (!go) std::this_thread::yield();
      w.submit([&] { ran = true; });
    });
    go = true;
    submitter.join();
    waiter.join();
    w.wait_idle();
    EXPECT_TRUE(ran);
  }
}

TEST(OrderedWorker, NothingHandedOverStartsNoThread) {
  ordered_worker w;
  w.wait_idle();  // returns at once
  EXPECT_EQ(w.pending(), 0u);
}

}  // namespace
}  // namespace streamsan::sanitizer_api
