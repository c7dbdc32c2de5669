// The host buffers read-backs copy into (Note [Read-backs land in
// page-locked memory] in inject/precise/staging_buffer.h).
#include "inject/precise/staging_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace streamsan::precise {
namespace {

// Pins what it is asked to unless told to refuse; remembers the calls.
class recording_pinning final : public host_pinning {
 public:
  bool refuse = false;
  std::vector<std::pair<void*, std::size_t>> pinned;
  std::vector<std::pair<void*, std::uintptr_t>> unpinned;

  std::optional<std::uintptr_t> pin(void* p, std::size_t bytes) noexcept override {
    if (refuse) return std::nullopt;
    pinned.emplace_back(p, bytes);
    return pinned.size();
  }
  void unpin(void* p, std::uintptr_t token) noexcept override { unpinned.emplace_back(p, token); }
};

TEST(StagingBuffer, GrowsToWholePagesAndAtLeastTwiceItsSizePinnedEachTime) {
  recording_pinning pinning;
  staging_buffer b;
  b.reserve(100, &pinning);
  EXPECT_EQ(b.capacity(), 4096u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 4096, 0u);
  EXPECT_TRUE(b.pinned());
  void* const first = b.data();
  b.reserve(4096, &pinning);  // fits: nothing happens
  EXPECT_EQ(pinning.pinned.size(), 1u);
  b.reserve(5000, &pinning);
  EXPECT_EQ(b.capacity(), 8192u);
  ASSERT_EQ(pinning.unpinned.size(), 1u);
  EXPECT_EQ(pinning.unpinned[0], (std::pair<void*, std::uintptr_t>{first, 1}));
  ASSERT_EQ(pinning.pinned.size(), 2u);
  EXPECT_EQ(pinning.pinned[1], (std::pair<void*, std::size_t>{b.data(), 8192}));
}

TEST(StagingBuffer, ABufferThatCannotBePinnedIsStillUsable) {
  recording_pinning pinning;
  pinning.refuse = true;
  staging_buffer b;
  b.reserve(10000, &pinning);
  EXPECT_FALSE(b.pinned());
  EXPECT_GE(b.capacity(), 10000u);
  static_cast<char*>(b.data())[9999] = 1;
  b = staging_buffer();
  EXPECT_TRUE(pinning.unpinned.empty());  // nothing pinned, nothing to take back
}

TEST(StagingBuffer, AMoveHandsThePinOverAndItIsTakenBackOnce) {
  recording_pinning pinning;
  {
    staging_buffer a;
    a.reserve(1, &pinning);
    void* const p = a.data();
    staging_buffer b(std::move(a));
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_FALSE(a.pinned());
    EXPECT_EQ(b.data(), p);
    EXPECT_TRUE(b.pinned());
  }
  EXPECT_EQ(pinning.unpinned.size(), 1u);
}

TEST(StagingBuffer, UnpinKeepsTheMemoryAndIsNotRepeatedAtTheEnd) {
  recording_pinning pinning;
  {
    staging_buffer b;
    b.reserve(1, &pinning);
    b.unpin();
    EXPECT_FALSE(b.pinned());
    EXPECT_NE(b.data(), nullptr);
    static_cast<char*>(b.data())[0] = 1;
  }
  EXPECT_EQ(pinning.unpinned.size(), 1u);
}

TEST(StagingBuffer, WithoutAPinningNothingIsPinned) {
  staging_buffer b;
  b.reserve(64, nullptr);
  EXPECT_FALSE(b.pinned());
  EXPECT_EQ(b.capacity(), 4096u);
}

}  // namespace
}  // namespace streamsan::precise
