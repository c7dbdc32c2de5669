#include <gtest/gtest.h>

#include <atomic>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

using testing::expect_error;

constexpr std::uint64_t n = 32;
constexpr std::uint64_t bytes = n * sizeof(float);

class Launch : public testing::runtime_test {};

TEST_F(Launch, TheKernelLibraryComputes) {
  stream s;
  auto x = allocate_device(bytes);
  auto y = allocate_device(bytes);
  auto z = allocate_device(bytes);
  auto sum = allocate_device(sizeof(float));
  launch(s, kernels::fill{x, 2.0f});
  launch(s, kernels::fill{y, 1.0f});
  launch(s, kernels::scale{x, 3.0f});           // x = 6
  launch(s, kernels::axpy{0.5f, x, y});         // y = 0.5 * 6 + 1 = 4
  launch(s, kernels::copy{z, y});               // z = 4
  launch(s, kernels::reduce_sum{z, sum});       // 32 * 4
  launch(s, kernels::spin{std::chrono::microseconds(1)});
  s.synchronize();
  EXPECT_EQ(testing::read_back(x), std::vector<float>(n, 6.0f));
  EXPECT_EQ(testing::read_back(z), std::vector<float>(n, 4.0f));
  EXPECT_EQ(testing::read_back(sum)[0], 128.0f);
}

TEST_F(Launch, DeclaredAccessesReachTheLog) {
  testing::kept_log log;
  stream s;
  auto x = allocate_device(bytes);
  auto y = allocate_device(bytes);
  launch(s, kernels::axpy{2.0f, x, y}, reads(x), read_writes(y));
  const auto launches = log.all<kernel_launch>();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].stream, s.id());
  EXPECT_EQ(log.text(launches[0].kernel), "axpy");
  ASSERT_EQ(launches[0].accesses.size(), 2u);
  EXPECT_EQ(launches[0].accesses[0].range.alloc, x.alloc());
  EXPECT_EQ(launches[0].accesses[0].range.size, bytes);
  EXPECT_EQ(launches[0].accesses[0].mode, access_mode::read);
  EXPECT_EQ(launches[0].accesses[1].range.alloc, y.alloc());
  EXPECT_EQ(launches[0].accesses[1].mode, access_mode::read_write);
}

TEST_F(Launch, WithoutDeclarationsTheKernelsOwnAccessesAreLogged) {
  testing::kept_log log;
  stream s;
  auto src = allocate_device(bytes);
  auto dst = allocate_device(bytes);
  auto out = allocate_device(2 * sizeof(float));
  launch(s, kernels::copy{dst, src});
  launch(s, kernels::reduce_sum{src, out});
  launch(s, kernels::spin{});
  const auto launches = log.all<kernel_launch>();
  ASSERT_EQ(launches.size(), 3u);
  ASSERT_EQ(launches[0].accesses.size(), 2u);
  EXPECT_EQ(launches[0].accesses[0].range.alloc, src.alloc());
  EXPECT_EQ(launches[0].accesses[0].mode, access_mode::read);
  EXPECT_EQ(launches[0].accesses[1].range.alloc, dst.alloc());
  EXPECT_EQ(launches[0].accesses[1].mode, access_mode::write);
  ASSERT_EQ(launches[1].accesses.size(), 2u);
  EXPECT_EQ(launches[1].accesses[1].range.size, sizeof(float));  // one float written
  EXPECT_TRUE(launches[2].accesses.empty());
}

TEST_F(Launch, ASpinWithDeclaredAccessesStandsInForAnyKernel) {
  testing::kept_log log;
  stream s;
  auto a = allocate_device(bytes);
  const declared_access declared[] = {writes(a.subview(16, 32)), reads(a.subview(0, 8))};
  launch(s, kernels::spin{}, declared, "producer");
  const auto launches = log.all<kernel_launch>();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(log.text(launches[0].kernel), "producer");
  ASSERT_EQ(launches[0].accesses.size(), 2u);
  EXPECT_EQ(launches[0].accesses[0].range.offset, 16u);
  EXPECT_EQ(launches[0].accesses[0].range.size, 32u);
  EXPECT_EQ(launches[0].accesses[0].mode, access_mode::write);
  EXPECT_EQ(launches[0].accesses[1].mode, access_mode::read);
}

TEST_F(Launch, ManyDeclaredAccessesAreAllLogged) {
  testing::kept_log log;
  stream s;
  auto a = allocate_device(64 * sizeof(float));
  std::vector<declared_access> declared;
  for (std::uint64_t i = 0; i < 20; ++i) declared.push_back(reads(a.elements<float>(i, 1)));
  launch(s, kernels::spin{}, declared);
  const auto launches = log.all<kernel_launch>();
  ASSERT_EQ(launches.size(), 1u);
  ASSERT_EQ(launches[0].accesses.size(), 20u);
  EXPECT_EQ(launches[0].accesses[19].range.offset, 19 * sizeof(float));
}

TEST_F(Launch, MismatchedSizesThrow) {
  stream s;
  auto a = allocate_device(bytes);
  auto b = allocate_device(2 * bytes);
  expect_error<usage_error>([&] { launch(s, kernels::copy{a, b}); },
                            "launching copy on " + s.name() + ": sizes differ (128 and 256 bytes)");
}

TEST_F(Launch, KernelsCannotReachPageableMemory) {
  stream s;
  auto host = allocate_pageable_host(bytes);
  expect_error<usage_error>([&] { launch(s, kernels::fill{host, 1.0f}); },
                            "launching fill on " + s.name() +
                                ": a kernel cannot access pageable host memory (" +
                                to_string(host.alloc()) + ")");
}

TEST_F(Launch, HostFunctionsRunInStreamOrder) {
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    initialize(testing::test_options(seed));
    stream s;
    auto flag = allocate_pinned_host(sizeof(float));
    std::atomic<float> seen{-1.0f};
    launch(s, kernels::fill{flag, 1.0f});
    // S-HOSTFN-1: runs after the fill; reads the pinned buffer directly.
    launch_host_func(s, [&, p = flag.as<float>()] { seen = *p; }, std::vector{reads(flag)});
    launch(s, kernels::fill{flag, 2.0f});  // waits for the host function
    s.synchronize();
    EXPECT_EQ(seen.load(), 1.0f) << "seed " << seed;
    EXPECT_EQ(host_read_at<float>(flag, 0), 2.0f);
  }
}

TEST_F(Launch, HostFunctionsMustNotCallTheApi) {
  stream s;
  std::string message;
  launch_host_func(s, [&] {
    try {
      (void)device_count();
    } catch (const usage_error& e) {
      message = e.what();
    }
  });
  s.synchronize();
  EXPECT_EQ(message,
            "a host function called the streamsan API: host functions must not make CUDA calls "
            "(S-HOSTFN-1)");
}

TEST_F(Launch, HostFunctionsReachTheLog) {
  testing::kept_log log;
  stream s;
  auto buffer = allocate_pinned_host(bytes);
  const declared_access declared[] = {read_writes(buffer)};
  launch_host_func(s, [] {}, declared, "checksum");
  s.synchronize();
  const auto funcs = log.all<host_func>();
  ASSERT_EQ(funcs.size(), 1u);
  EXPECT_EQ(funcs[0].stream, s.id());
  EXPECT_EQ(log.text(funcs[0].name), "checksum");
  ASSERT_EQ(funcs[0].accesses.size(), 1u);
  EXPECT_EQ(funcs[0].accesses[0].mode, access_mode::read_write);
}

}  // namespace
}  // namespace streamsan::rt
