#include "harness/nearest_name.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>

namespace streamsan::harness {
namespace {

using namespace std::string_view_literals;
using testing::ElementsAre;
using testing::IsEmpty;

constexpr std::array keys{"op"sv, "label"sv, "dst"sv, "src"sv, "async"sv, "stream"sv};

TEST(EditDistance, CountsATranspositionAsOne) {
  EXPECT_EQ(edit_distance("stream", "stream"), 0u);
  EXPECT_EQ(edit_distance("strem", "stream"), 1u);
  EXPECT_EQ(edit_distance("sycnhronize", "synchronize"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(NearestNames, SpellingUpToCaseAndSeparators) {
  constexpr std::array ops{"wait"sv, "wait_stream"sv};
  EXPECT_THAT(nearest_names("waitStream", ops), ElementsAre("wait_stream"));
  EXPECT_THAT(nearest_names("WAIT-STREAM", ops), ElementsAre("wait_stream"));
}

TEST(NearestNames, SynonymsAreOnlyThoseValidHere) {
  EXPECT_THAT(nearest_names("buffer", keys), ElementsAre("dst", "src"));
  EXPECT_THAT(nearest_names("from", keys), ElementsAre("src"));
  EXPECT_THAT(nearest_names("destination", keys), ElementsAre("dst"));
  constexpr std::array host_read{"op"sv, "label"sv, "src"sv};
  EXPECT_THAT(nearest_names("buffer", host_read), ElementsAre("src"));
}

TEST(NearestNames, TyposWithinABoundThatGrowsWithTheWord) {
  EXPECT_THAT(nearest_names("strem", keys), ElementsAre("stream"));
  EXPECT_THAT(nearest_names("asnyc", keys), ElementsAre("async"));
  EXPECT_THAT(nearest_names("zzzzzz", keys), IsEmpty());
  EXPECT_THAT(nearest_names("", keys), IsEmpty());
}

TEST(DidYouMean, Phrases) {
  EXPECT_EQ(did_you_mean("strem", keys), "did you mean 'stream'?");
  EXPECT_EQ(did_you_mean("buffer", keys), "did you mean 'dst' or 'src'?");
  EXPECT_EQ(did_you_mean("teleport", keys), "");
}

}  // namespace
}  // namespace streamsan::harness
