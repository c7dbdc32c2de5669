// Stream order (S-STREAM-1, S-STREAM-4, S-STREAM-5), the legacy default
// stream's implicit synchronization (S-DEFAULT-1..3) and device queries.
//
// Note [Racing against a spin]
// A test that checks ordering puts a long spin (tens of milliseconds) in
// front of the producer: with the ordering the consumer sees the produced
// value; without it the consumer would run during the spin and see the old
// one. A test that checks the *absence* of ordering does the converse and
// expects the old value, which the device cannot fail to show unless it
// serializes.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "tests/cuda/backend_fixture.h"

namespace streamsan::rt::testing {
namespace {

using namespace std::chrono_literals;

TEST_F(CudaBackend, NameIsCuda) { EXPECT_EQ(b().name(), "cuda"); }

TEST_F(CudaBackend, DevicePropertiesAgreeWithMemoryInfo) {
  ASSERT_GE(b().device_count(), 1);
  const device_properties p = b().properties(device_);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GE(p.major, 1);
  EXPECT_GT(p.multi_processor_count, 0);
  const memory_info m = b().mem_get_info(device_);
  EXPECT_EQ(m.total, p.total_memory);
  EXPECT_LE(m.free, m.total);
  EXPECT_FALSE(b().can_access_peer(device_, device_));
}

TEST_F(CudaBackend, PriorityRangeIsOrderedAndUsable) {
  const priority_range range = b().stream_priority_range(device_);
  EXPECT_LE(range.greatest, range.least);
  const device_stream high = make_stream(true, range.greatest);
  float* x = floats(1);
  launch(high, fill_args{x, 1, 4.0f});
  b().synchronize_stream(high);
  EXPECT_EQ(read_one(x), 4.0f);
}

TEST_F(CudaBackend, DefaultStreamHandlesAreStable) {
  EXPECT_EQ(b().legacy_default_stream(device_), b().legacy_default_stream(device_));
  EXPECT_EQ(b().per_thread_default_stream(device_), b().per_thread_default_stream(device_));
  EXPECT_NE(b().legacy_default_stream(device_), b().per_thread_default_stream(device_));
}

TEST_F(CudaBackend, OperationsOnOneStreamRunInIssueOrder) {
  const device_stream s = make_stream();
  float* x = floats(1024);
  float* y = floats(1024);
  spin(s, 20ms);
  launch(s, fill_args{x, 1024, 2.0f});
  launch(s, scale_args{x, 1024, 3.0f});
  launch(s, copy_args{y, x, 1024});
  launch(s, fill_args{x, 1024, 0.0f});
  b().synchronize_stream(s);
  EXPECT_EQ(read(y, 1024), std::vector<float>(1024, 6.0f));
  EXPECT_EQ(read(x, 1024), std::vector<float>(1024, 0.0f));
}

TEST_F(CudaBackend, QueryStreamIsFalseWhileWorkIsPendingAndTrueAfterSynchronize) {
  const device_stream s = make_stream();
  EXPECT_TRUE(b().query_stream(s));
  spin(s, 50ms);
  EXPECT_FALSE(b().query_stream(s));
  b().synchronize_stream(s);
  EXPECT_TRUE(b().query_stream(s));
}

TEST_F(CudaBackend, SynchronizeDeviceWaitsForEveryStream) {
  const device_stream s1 = make_stream();
  const device_stream s2 = make_stream();
  spin(s1, 30ms);
  spin(s2, 30ms);
  b().synchronize_device(device_);
  EXPECT_TRUE(b().query_stream(s1));
  EXPECT_TRUE(b().query_stream(s2));
}

TEST_F(CudaBackend, LegacyStreamWaitsForPriorWorkOnBlockingStreams) {
  const device_stream blocking = make_stream(/*non_blocking=*/false);
  float* x = floats(1);
  float* y = floats(1);
  produce_late(blocking, x, 1.0f);
  launch(legacy(), copy_args{y, x, 1});
  EXPECT_EQ(read_one(y), 1.0f);
}

TEST_F(CudaBackend, BlockingStreamWaitsForPriorLegacyWork) {
  const device_stream blocking = make_stream(/*non_blocking=*/false);
  float* x = floats(1);
  float* y = floats(1);
  produce_late(legacy(), x, 1.0f);
  launch(blocking, copy_args{y, x, 1});
  b().synchronize_stream(blocking);
  EXPECT_EQ(read_one(y), 1.0f);
}

TEST_F(CudaBackend, NonBlockingStreamDoesNotSynchronizeWithLegacyStream) {
  const device_stream non_blocking = make_stream(/*non_blocking=*/true);
  float* x = floats(1);
  float* y = floats(1);
  produce_late(non_blocking, x, 1.0f, 200ms);
  launch(legacy(), copy_args{y, x, 1});
  // read() is a cudaMemcpy on the legacy stream: it waits for the copy only.
  EXPECT_EQ(read_one(y), 0.0f);
  b().synchronize_stream(non_blocking);
  EXPECT_EQ(read_one(x), 1.0f);
}

TEST_F(CudaBackend, PerThreadDefaultStreamWaitsForPriorLegacyWork) {
  float* x = floats(1);
  float* y = floats(1);
  produce_late(legacy(), x, 1.0f);
  launch(per_thread(), copy_args{y, x, 1});
  b().synchronize_stream(per_thread());
  EXPECT_EQ(read_one(y), 1.0f);
}

TEST_F(CudaBackend, DestroyingAStreamWithPendingWorkLetsTheWorkComplete) {
  float* x = floats(1);
  const device_stream s{device_, b().create_stream(device_, true, 0)};
  produce_late(s, x, 7.0f, 20ms);
  b().destroy_stream(s);
  b().synchronize_device(device_);
  EXPECT_EQ(read_one(x), 7.0f);
}

TEST_F(CudaBackend, CallsLeaveTheCurrentDeviceUnchanged) {
  const int count = b().device_count();
  if (count < 2) GTEST_SKIP() << "needs two devices to observe a device switch";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const device_stream other{1, b().create_stream(1, true, 0)};
  b().launch_kernel(other, fill_args{nullptr, 0, 0.0f});
  b().synchronize_stream(other);
  b().destroy_stream(other);
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 0);
}

}  // namespace
}  // namespace streamsan::rt::testing
