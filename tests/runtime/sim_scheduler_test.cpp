// The sim backend's scheduler: missing synchronization really produces wrong
// values under some seeds, reproducibly; correct programs never do.
#include <gtest/gtest.h>

#include <cmath>

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

namespace streamsan::rt {
namespace {

// Producer on `producer_options`' stream, consumer on the legacy default
// stream, no explicit synchronization. Returns the consumer's sum.
float produce_then_consume_on_legacy(std::uint64_t seed, bool producer_blocking) {
  initialize(testing::test_options(seed));
  float result = 0;
  {
    auto a = allocate_device(elements * sizeof(float));
    auto sum = allocate_pinned_host(sizeof(float));
    stream producer({.non_blocking = !producer_blocking});
    launch(producer, kernels::fill{a, 1.0f});
    launch(legacy_default_stream(), kernels::reduce_sum{a, sum});
    synchronize();
    result = host_read_at<float>(sum, 0);
  }
  shutdown();
  return result;
}

TEST(SimScheduler, TheLegacyStreamWaitsForBlockingStreams) {
  STREAMSAN_REQUIRE_SIM();
  for (std::uint64_t seed = 1; seed <= 64; ++seed) {  // S-DEFAULT-1
    EXPECT_EQ(produce_then_consume_on_legacy(seed, true), static_cast<float>(elements))
        << "seed " << seed;
  }
}

TEST(SimScheduler, TheLegacyStreamDoesNotWaitForNonBlockingStreams) {
  STREAMSAN_REQUIRE_SIM();
  int wrong = 0;
  for (std::uint64_t seed = 1; seed <= 64; ++seed) {  // S-DEFAULT-2
    if (produce_then_consume_on_legacy(seed, false) != static_cast<float>(elements)) ++wrong;
  }
  EXPECT_GT(wrong, 0);
}

// S-STREAM-6: wait_stream covers the work submitted before the call only.
// Returns the side stream's sum: elements (first fill) or 2 * elements (the
// later fill ran first).
float wait_stream_then_refill(std::uint64_t seed) {
  initialize(testing::test_options(seed));
  float result = 0;
  {
    auto a = allocate_device(elements * sizeof(float));
    auto sum = allocate_pinned_host(sizeof(float));
    stream main_stream;
    stream side;
    launch(main_stream, kernels::fill{a, 1.0f});
    side.wait_stream(main_stream);
    launch(main_stream, kernels::fill{a, 2.0f});  // not covered by the wait
    launch(side, kernels::reduce_sum{a, sum});
    synchronize();
    result = host_read_at<float>(sum, 0);
  }
  shutdown();
  return result;
}

TEST(SimScheduler, WaitStreamDoesNotCoverLaterWork) {
  STREAMSAN_REQUIRE_SIM();
  bool saw_first = false;
  bool saw_later = false;
  for (std::uint64_t seed = 1; seed <= 64; ++seed) {
    const float sum = wait_stream_then_refill(seed);
    if (sum == static_cast<float>(elements)) saw_first = true;
    else if (sum == 2.0f * static_cast<float>(elements)) saw_later = true;
    else ADD_FAILURE() << "seed " << seed << " summed a fill that never ran: " << sum;
  }
  EXPECT_TRUE(saw_first);
  EXPECT_TRUE(saw_later);
}

TEST(SimScheduler, TheSameSeedGivesTheSameSchedule) {
  STREAMSAN_REQUIRE_SIM();
  for (std::uint64_t seed = 1; seed <= 32; ++seed) {
    EXPECT_EQ(wait_stream_then_refill(seed), wait_stream_then_refill(seed)) << "seed " << seed;
    EXPECT_EQ(fill_then_sum(seed, false), fill_then_sum(seed, false)) << "seed " << seed;
  }
}

TEST(SimScheduler, EagerPolicyRunsWorkInIssueOrder) {
  STREAMSAN_REQUIRE_SIM();
  auto options = testing::test_options();
  options.sim.policy = sim_policy::eager;
  initialize(options);
  {
    auto a = allocate_device(elements * sizeof(float));
    auto sum = allocate_pinned_host(sizeof(float));
    stream side;
    launch(current_stream(), kernels::fill{a, 1.0f});
    EXPECT_TRUE(current_stream().query());  // already ran
    launch(side, kernels::reduce_sum{a, sum});
    side.synchronize();
    EXPECT_EQ(host_read_at<float>(sum, 0), static_cast<float>(elements));
  }
  shutdown();
}

TEST(SimScheduler, FreedMemoryIsPoisoned) {
  STREAMSAN_REQUIRE_SIM();
  initialize(testing::test_options(1, 0));
  {
    stream s;
    auto a = allocate_async(4 * sizeof(float), s);
    auto keep = allocate_device(4 * sizeof(float));
    const auto view = a.view();
    launch(s, kernels::fill{a, 1.0f});
    a.free();  // cudaFreeAsync on s: after the fill
    launch(s, kernels::copy{keep, view});  // a use after free, ordered after the free
    s.synchronize();
    EXPECT_TRUE(std::isnan(testing::read_back(keep)[0]));
  }
  shutdown();
}

TEST(SimScheduler, NoProgressLeavesWorkPendingUntilTheHostWaits) {
  STREAMSAN_REQUIRE_SIM();
  initialize(testing::test_options(1, 0));
  {
    stream s;
    for (int i = 0; i < 10; ++i) launch(s, kernels::spin{});
    EXPECT_FALSE(s.query());
    s.synchronize();
    EXPECT_TRUE(s.query());
  }
  shutdown();
}

}  // namespace
}  // namespace streamsan::rt
