#include <gtest/gtest.h>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

class Nvtx : public testing::runtime_test {};

TEST_F(Nvtx, RangesAndMarksReachTheLog) {
  testing::kept_log log;
  nvtx::range_push("forward");
  {
    nvtx::range inner("attention");
    nvtx::mark("checkpoint");
  }
  nvtx::range_pop();
  std::vector<std::string> trace;
  for (const auto& r : log.records()) {
    if (const auto* p = std::get_if<nvtx_push>(&r)) trace.push_back("push " + std::string(log.text(p->message)));
    if (std::holds_alternative<nvtx_pop>(r)) trace.emplace_back("pop");
    if (const auto* m = std::get_if<nvtx_mark>(&r)) trace.push_back("mark " + std::string(log.text(m->message)));
  }
  const std::vector<std::string> expected{"push forward", "push attention", "mark checkpoint",
                                          "pop", "pop"};
  EXPECT_EQ(trace, expected);
}

TEST_F(Nvtx, PopWithoutPushThrows) {
  testing::expect_error<usage_error>([] { nvtx::range_pop(); },
                                     "nvtx::range_pop: the calling thread has no open range");
}

TEST_F(Nvtx, RangesArePerThread) {
  nvtx::range_push("main thread");
  std::string message;
  std::thread([&] {
    try {
      nvtx::range_pop();
    } catch (const usage_error& e) {
      message = e.what();
    }
  }).join();
  EXPECT_EQ(message, "nvtx::range_pop: the calling thread has no open range");
  nvtx::range_pop();
}

}  // namespace
}  // namespace streamsan::rt
