// Note [The launch gate]: a change never overlaps a holder, a holder waits
// for a change to end, and a change never waits.
#include "inject/sanitizer_api/launch_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace streamsan::sanitizer_api {
namespace {

TEST(LaunchGate, AChangeIsRefusedWhileALaunchHoldsIt) {
  launch_gate gate;
  gate.lock_shared();
  gate.lock_shared();
  EXPECT_FALSE(gate.try_lock());
  gate.unlock_shared();
  EXPECT_FALSE(gate.try_lock());
  gate.unlock_shared();
  ASSERT_TRUE(gate.try_lock());
  EXPECT_FALSE(gate.try_lock());  // one change at a time
  gate.unlock();
  std::unique_lock change(gate, std::try_to_lock);
  EXPECT_TRUE(change.owns_lock());
}

TEST(LaunchGate, ALaunchWaitsForTheChangeInProgress) {
  launch_gate gate;
  ASSERT_TRUE(gate.try_lock());
  std::atomic<bool> entered{false};
  std::thread launch([&] {
    gate.lock_shared();
    entered.store(true);
    gate.unlock_shared();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(entered.load());
  gate.unlock();
  launch.join();
  EXPECT_TRUE(entered.load());
  EXPECT_TRUE(gate.try_lock());  // the launch's count went back to zero
  gate.unlock();
}

// Launches on several threads against changes tried without waiting: no
// launch is ever inside the gate while a change holds it. The launches go
// on until 200 changes got through (or a bound, so that a gate that never
// lets one through fails rather than hangs).
TEST(LaunchGate, NoLaunchIsInsideAChange) {
  constexpr int wanted_changes = 200;
  launch_gate gate;
  std::atomic<int> inside{0};
  std::atomic<bool> changing{false};
  std::atomic<int> overlaps{0};
  std::atomic<int> changes{0};
  std::atomic<int> launches_running{3};
  std::vector<std::thread> launches;
  for (int t = 0; t < 3; ++t) {
    launches.emplace_back([&] {
      for (int i = 0; i < 2'000'000 && changes.load() < wanted_changes; ++i) {
        gate.lock_shared();
        inside.fetch_add(1);
        if (changing.load()) overlaps.fetch_add(1);
        inside.fetch_sub(1);
        gate.unlock_shared();
        if (i % 64 == 0) std::this_thread::yield();
      }
      launches_running.fetch_sub(1);
    });
  }
  std::thread changer([&] {
    while (launches_running.load() > 0 && changes.load() < wanted_changes) {
      std::unique_lock change(gate, std::try_to_lock);
      if (!change.owns_lock()) continue;
      changing.store(true);
      if (inside.load() != 0) overlaps.fetch_add(1);
      std::this_thread::yield();
      changing.store(false);
      changes.fetch_add(1);
    }
  });
  for (auto& l : launches) l.join();
  changer.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(changes.load(), wanted_changes);
}

}  // namespace
}  // namespace streamsan::sanitizer_api
