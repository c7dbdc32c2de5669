// Host functions (S-HOSTFN-1): they run after all prior work on the stream,
// later work waits for them, and each runs exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/cuda/backend_fixture.h"

namespace streamsan::rt::testing {
namespace {

using namespace std::chrono_literals;

TEST_F(CudaBackend, HostFunctionRunsAfterPriorWorkOnItsStream) {
  const device_stream s = make_stream();
  float* pinned = floats(1, memory_kind::pinned_host);
  *pinned = 0.0f;
  float seen = -1.0f;
  produce_late(s, pinned, 5.0f);
  b().launch_host_func(s, [&] { seen = *pinned; });
  b().synchronize_stream(s);
  EXPECT_EQ(seen, 5.0f);
}

TEST_F(CudaBackend, LaterWorkWaitsForTheHostFunction) {
  const device_stream s = make_stream();
  float* pinned = floats(1, memory_kind::pinned_host);
  float* x = floats(1);
  *pinned = 0.0f;
  b().launch_host_func(s, [pinned] {
    std::this_thread::sleep_for(30ms);
    *pinned = 8.0f;
  });
  launch(s, copy_args{x, pinned, 1});
  b().synchronize_stream(s);
  EXPECT_EQ(read_one(x), 8.0f);
}

TEST_F(CudaBackend, EachHostFunctionRunsExactlyOnceAndIsReleased) {
  const device_stream s = make_stream();
  std::atomic<int> runs{0};
  auto token = std::make_shared<int>(0);
  for (int i = 0; i < 100; ++i) {
    b().launch_host_func(s, [&runs, token] { runs.fetch_add(1); });
  }
  b().synchronize_stream(s);
  EXPECT_EQ(runs.load(), 100);
  // The trampoline deleted every std::function (and its copy of `token`).
  EXPECT_EQ(token.use_count(), 1);
}

TEST_F(CudaBackend, AThrowingHostFunctionDoesNotStopTheStream) {
  const device_stream s = make_stream();
  std::atomic<int> runs{0};
  b().launch_host_func(s, [] { throw std::runtime_error("planted"); });
  b().launch_host_func(s, [&runs] { runs.fetch_add(1); });
  b().synchronize_stream(s);
  EXPECT_EQ(runs.load(), 1);
}

}  // namespace
}  // namespace streamsan::rt::testing
