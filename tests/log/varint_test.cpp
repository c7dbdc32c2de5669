#include "sanitizer/log/varint.h"

#include <gtest/gtest.h>

#include <limits>

namespace streamsan {
namespace {

std::vector<std::uint8_t> encoded(std::uint64_t v) {
  std::vector<std::uint8_t> out;
  put_varint(out, v);
  return out;
}

TEST(Varint, SmallValuesTakeOneByte) {
  EXPECT_EQ(encoded(0), (std::vector<std::uint8_t>{0x00}));
  EXPECT_EQ(encoded(127), (std::vector<std::uint8_t>{0x7f}));
  EXPECT_EQ(encoded(128), (std::vector<std::uint8_t>{0x80, 0x01}));
  EXPECT_EQ(encoded(300), (std::vector<std::uint8_t>{0xac, 0x02}));
}

TEST(Varint, MaximumTakesTenBytesAndRoundTrips) {
  const auto max = std::numeric_limits<std::uint64_t>::max();
  const auto bytes = encoded(max);
  ASSERT_EQ(bytes.size(), max_varint_bytes);
  EXPECT_EQ(bytes.back(), 0x01);
  std::size_t pos = 0;
  std::uint64_t value = 0;
  ASSERT_EQ(get_varint(bytes, pos, value), varint_status::ok);
  EXPECT_EQ(value, max);
  EXPECT_EQ(pos, bytes.size());
}

TEST(Varint, TruncatedInputIsReportedAndLeavesPositionAlone) {
  const std::vector<std::uint8_t> bytes = {0x80, 0x80};
  std::size_t pos = 0;
  std::uint64_t value = 7;
  EXPECT_EQ(get_varint(bytes, pos, value), varint_status::truncated);
  EXPECT_EQ(pos, 0u);
  EXPECT_EQ(value, 7u);
}

TEST(Varint, MoreThanSixtyFourBitsIsOverflow) {
  // Ten bytes whose last carries more than the one remaining bit.
  std::vector<std::uint8_t> bytes(9, 0xff);
  bytes.push_back(0x02);
  std::size_t pos = 0;
  std::uint64_t value = 0;
  EXPECT_EQ(get_varint(bytes, pos, value), varint_status::overflow);
  // Eleven continuation bytes.
  const std::vector<std::uint8_t> endless(11, 0x80);
  EXPECT_EQ(get_varint(endless, pos, value), varint_status::overflow);
  EXPECT_EQ(pos, 0u);
}

TEST(Varint, ZigzagKeepsSmallNegativesShort) {
  EXPECT_EQ(zigzag_encode(0), 0u);
  EXPECT_EQ(zigzag_encode(-1), 1u);
  EXPECT_EQ(zigzag_encode(1), 2u);
  EXPECT_EQ(zigzag_encode(-2), 3u);
  for (const std::int64_t v : {std::numeric_limits<std::int64_t>::min(), std::int64_t{-12345},
                               std::int64_t{0}, std::numeric_limits<std::int64_t>::max()}) {
    EXPECT_EQ(zigzag_decode(zigzag_encode(v)), v);
  }
}

}  // namespace
}  // namespace streamsan
