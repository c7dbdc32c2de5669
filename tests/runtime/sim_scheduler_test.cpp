// The sim backend's scheduler: missing synchronization really produces wrong
// values under some seeds, reproducibly; correct programs never do.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

constexpr std::uint64_t elements = 1024;

// The canonical S-STREAM-2 example: the default stream fills A, a side
// stream sums A. Returns the sum the host reads back.
float fill_then_sum(std::uint64_t seed, bool synchronized) {
  initialize(testing::test_options(seed));
  float result = 0;
  {
    auto a = allocate_device(elements * sizeof(float));
    auto sum = allocate_pinned_host(sizeof(float));
    stream side;
    const auto main = current_stream();
    launch(main, kernels::fill{a, 1.0f});
    if (synchronized) side.wait_stream(main);
    launch(side, kernels::reduce_sum{a, sum});
    side.synchronize();
    result = host_read_at<float>(sum, 0);
  }
  shutdown();
  return result;
}

TEST(SimScheduler, MissingSynchronizationGivesAWrongSumUnderSomeSeed) {
  STREAMSAN_REQUIRE_SIM();
  std::optional<std::uint64_t> racy_seed;
  int correct = 0;
  for (std::uint64_t seed = 1; seed <= 64; ++seed) {
    const float sum = fill_then_sum(seed, false);
    if (sum == static_cast<float>(elements)) {
      ++correct;
    } else {
      EXPECT_EQ(sum, 0.0f) << "seed " << seed;  // the sum ran before the fill
      if (!racy_seed) racy_seed = seed;
    }
  }
  ASSERT_TRUE(racy_seed.has_value()) << "no seed ran the sum before the fill";
  EXPECT_GT(correct, 0) << "no seed ran the fill first";
  // Reproducible: the same seed gives the same wrong value again.
  EXPECT_EQ(fill_then_sum(*racy_seed, false), 0.0f);
}

TEST(SimScheduler, WaitStreamMakesEverySeedCorrect) {
  STREAMSAN_REQUIRE_SIM();
  for (std::uint64_t seed = 1; seed <= 64; ++seed) {
    EXPECT_EQ(fill_then_sum(seed, true), static_cast<float>(elements)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace streamsan::rt
