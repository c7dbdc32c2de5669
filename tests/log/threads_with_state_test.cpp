#include "sanitizer/log/threads_with_state.h"

#include <gtest/gtest.h>

namespace streamsan {
namespace {

// Note [A thread-local looked at only when it can hold something]
TEST(ThreadsWithState, CountsOnlyAStateBeingSetOrCleared) {
  threads_with_state threads;
  EXPECT_TRUE(threads.none());
  threads.changed(false, true);
  threads.changed(true, true);  // set again: still one thread
  threads.changed(false, true);
  threads.changed(true, false);
  EXPECT_FALSE(threads.none());
  threads.changed(false, false);  // cleared again: nothing changes
  threads.changed(true, false);
  EXPECT_TRUE(threads.none());
}

}  // namespace
}  // namespace streamsan
