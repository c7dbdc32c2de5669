// Note [A forked child has none of our threads]: the process that started a
// thread of ours is not forked; a child forked from it is.
#include "sanitizer/log/process_owner.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <thread>

namespace streamsan {
namespace {

// What `in_child` returns, as the exit status of a forked child (0: true).
template <class Check>
bool true_in_a_forked_child(Check in_child) {
  const pid_t child = ::fork();
  if (child == 0) std::_Exit(in_child() ? 0 : 1);
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child) {
    ADD_FAILURE() << "fork or waitpid failed";
    return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(ProcessOwner, NothingClaimedIsNeverForked) {
  const process_owner owner;
  EXPECT_FALSE(owner.forked());
  EXPECT_TRUE(true_in_a_forked_child([&] { return !owner.forked(); }));
}

TEST(ProcessOwner, TheClaimingProcessIsNotForkedAndItsChildIs) {
  process_owner owner;
  owner.claim();
  EXPECT_FALSE(owner.forked());
  EXPECT_TRUE(true_in_a_forked_child([&] { return owner.forked(); }));
  EXPECT_FALSE(owner.forked());  // the parent, after the child is gone
}

// A child that starts a thread of its own claims again.
TEST(ProcessOwner, AChildThatClaimsOwnsItThere) {
  process_owner owner;
  owner.claim();
  EXPECT_TRUE(true_in_a_forked_child([&] {
    owner.claim();
    return !owner.forked();
  }));
  EXPECT_FALSE(owner.forked());
}

// Asked on one thread while another claims: under the TSan pass, a race
// if the pid were not atomic.
TEST(ProcessOwner, AskingWhileAnotherThreadClaims) {
  for (int round = 0; round < 20; ++round) {
    process_owner owner;
    std::atomic<bool> go{false};
    std::thread asker([&] {
      while (!go) std::this_thread::yield();
      for (int i = 0; i < 1000; ++i) EXPECT_FALSE(owner.forked());
    });
    go = true;
    owner.claim();
    asker.join();
  }
}

}  // namespace
}  // namespace streamsan
