// Each kernel of the library computes what kernel_args.h says.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "tests/cuda/backend_fixture.h"

namespace streamsan::rt::testing {
namespace {

// Not a multiple of the block size, and more than one block per grid-stride
// pass of the largest grid.
constexpr std::uint64_t n = 1'048'583;

std::vector<float> ramp(std::uint64_t count) {
  std::vector<float> v(count);
  for (std::uint64_t i = 0; i < count; ++i) v[i] = static_cast<float>(i % 1000);
  return v;
}

TEST_F(CudaBackend, FillWritesEveryElement) {
  float* x = floats(n);
  launch(legacy(), fill_args{x, n, 2.5f});
  const auto host = read(x, n);
  EXPECT_EQ(std::count(host.begin(), host.end(), 2.5f), static_cast<std::ptrdiff_t>(n));
}

TEST_F(CudaBackend, FillWritesOnlyCountElements) {
  float* x = floats(10);
  launch(legacy(), fill_args{x, 7, 1.0f});
  EXPECT_EQ(read(x, 10), (std::vector<float>{1, 1, 1, 1, 1, 1, 1, 0, 0, 0}));
}

TEST_F(CudaBackend, CopyCopiesEveryElement) {
  float* src = floats(n);
  float* dst = floats(n);
  const auto values = ramp(n);
  write(src, values);
  launch(legacy(), copy_args{dst, src, n});
  EXPECT_EQ(read(dst, n), values);
}

TEST_F(CudaBackend, ScaleMultipliesInPlace) {
  float* x = floats(n);
  write(x, ramp(n));
  launch(legacy(), scale_args{x, n, -2.0f});
  const auto host = read(x, n);
  auto expected = ramp(n);
  for (float& v : expected) v *= -2.0f;
  EXPECT_EQ(host, expected);
}

TEST_F(CudaBackend, AxpyAddsScaledX) {
  float* x = floats(n);
  float* y = floats(n);
  write(x, ramp(n));
  launch(legacy(), fill_args{y, n, 1.0f});
  launch(legacy(), axpy_args{3.0f, x, y, n});
  const auto host = read(y, n);
  auto expected = ramp(n);
  for (float& v : expected) v = 3.0f * v + 1.0f;
  EXPECT_EQ(host, expected);
}

TEST_F(CudaBackend, ReduceSumSumsAllElements) {
  // Small integers: every partial sum is exact in float, whatever the order.
  constexpr std::uint64_t count = 100'003;
  std::vector<float> values(count);
  for (std::uint64_t i = 0; i < count; ++i) values[i] = static_cast<float>(i % 7);
  float* in = floats(count);
  float* out = floats(1);
  write(in, values);
  launch(legacy(), reduce_sum_args{in, count, out});
  EXPECT_EQ(read_one(out), std::accumulate(values.begin(), values.end(), 0.0f));
}

TEST_F(CudaBackend, ReduceSumOfNothingIsZero) {
  float* in = floats(4);
  float* out = floats(1);
  launch(legacy(), fill_args{out, 1, 9.0f});
  launch(legacy(), reduce_sum_args{in, 0, out});
  EXPECT_EQ(read_one(out), 0.0f);
}

TEST_F(CudaBackend, ZeroCountLaunchIsAnOrderedOperation) {
  float* x = floats(4);
  launch(legacy(), fill_args{x, 0, 5.0f});
  launch(legacy(), scale_args{x, 0, 5.0f});
  b().synchronize_stream(legacy());
  EXPECT_EQ(read(x, 4), (std::vector<float>{0, 0, 0, 0}));
}

// The spin kernel's duration is checked with timing events in events_test.cpp.

}  // namespace
}  // namespace streamsan::rt::testing
