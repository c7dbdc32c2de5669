// Allocation kinds, stream-ordered allocation (S-MEM-5), copies in every
// direction, synchronous and asynchronous (S-COPY-1, S-COPY-2), and memsets
// (S-COPY-4).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <vector>

#include "tests/cuda/backend_fixture.h"

namespace streamsan::rt::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t count = 4099;

std::vector<float> pattern(float base) {
  std::vector<float> v(count);
  for (std::uint64_t i = 0; i < count; ++i) v[i] = base + static_cast<float>(i);
  return v;
}

TEST_F(CudaBackend, AllocationsAreAlignedTo256Bytes) {
  for (const memory_kind kind : {memory_kind::device, memory_kind::pinned_host,
                                 memory_kind::managed, memory_kind::pageable_host}) {
    const auto address = reinterpret_cast<std::uintptr_t>(floats(3, kind));
    EXPECT_EQ(address % 256, 0u) << "memory kind " << static_cast<int>(kind);
  }
}

TEST_F(CudaBackend, ZeroByteAllocationsAreDistinctAndFreeable) {
  void* a = b().allocate(memory_kind::device, device_, 0, legacy());
  void* c = b().allocate(memory_kind::device, device_, 0, legacy());
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a, c);
  b().deallocate(memory_kind::device, device_, a, legacy());
  b().deallocate(memory_kind::device, device_, c, legacy());
}

TEST_F(CudaBackend, AllocationBeyondTheDeviceReturnsNull) {
  const std::uint64_t too_much = b().mem_get_info(device_).total * 4;
  EXPECT_EQ(b().allocate(memory_kind::device, device_, too_much, legacy()), nullptr);
  // The failure left no error behind for the next call.
  float* x = floats(1);
  launch(legacy(), fill_args{x, 1, 1.0f});
  EXPECT_EQ(read_one(x), 1.0f);
}

TEST_F(CudaBackend, StreamOrderedAllocationIsUsableInStreamOrder) {
  const device_stream s = make_stream();
  float* pinned = floats(count, memory_kind::pinned_host);
  auto* x = static_cast<float*>(
      b().allocate(memory_kind::stream_ordered, device_, count * sizeof(float), s));
  ASSERT_NE(x, nullptr);
  launch(s, fill_args{x, count, 6.0f});
  copy_request r{pinned, x, count * sizeof(float), memory_kind::pinned_host,
                 memory_kind::stream_ordered, device_, device_, true, s};
  b().memcpy(r);
  b().deallocate(memory_kind::stream_ordered, device_, x, s);
  b().synchronize_stream(s);
  EXPECT_EQ(std::vector<float>(pinned, pinned + count), std::vector<float>(count, 6.0f));
}

// Copies host -> device -> device -> host for each pair of host kinds, each
// mode, and checks the round trip.
class CudaBackendCopies
    : public CudaBackend,
      public ::testing::WithParamInterface<std::tuple<memory_kind, memory_kind, bool>> {};

TEST_P(CudaBackendCopies, RoundTripPreservesTheData) {
  const auto [source_kind, target_kind, async] = GetParam();
  const device_stream s = async ? make_stream() : legacy();
  float* host_in = floats(count, source_kind);
  float* host_out = floats(count, target_kind);
  float* d1 = floats(count);
  float* d2 = floats(count, memory_kind::managed);
  float* d3 = floats(count);
  const auto values = pattern(0.5f);
  std::memcpy(host_in, values.data(), count * sizeof(float));
  std::memset(host_out, 0, count * sizeof(float));
  const std::uint64_t bytes = count * sizeof(float);
  b().memcpy({d1, host_in, bytes, memory_kind::device, source_kind, device_, device_, async, s});
  b().memcpy({d2, d1, bytes, memory_kind::managed, memory_kind::device, device_, device_, async, s});
  b().memcpy({d3, d2, bytes, memory_kind::device, memory_kind::managed, device_, device_, async, s});
  b().memcpy({host_out, d3, bytes, target_kind, memory_kind::device, device_, device_, async, s});
  if (async) b().synchronize_stream(s);
  EXPECT_EQ(std::vector<float>(host_out, host_out + count), values);
}

INSTANTIATE_TEST_SUITE_P(
    AllHostKinds, CudaBackendCopies,
    ::testing::Combine(::testing::Values(memory_kind::pageable_host, memory_kind::pinned_host),
                       ::testing::Values(memory_kind::pageable_host, memory_kind::pinned_host),
                       ::testing::Bool()));

TEST_F(CudaBackend, HostToHostCopiesAreComplete) {
  for (const bool async : {false, true}) {
    float* a = floats(count, memory_kind::pageable_host);
    float* c = floats(count, memory_kind::pinned_host);
    const auto values = pattern(2.0f);
    std::memcpy(a, values.data(), count * sizeof(float));
    b().memcpy({c, a, count * sizeof(float), memory_kind::pinned_host,
                memory_kind::pageable_host, device_, device_, async, make_stream()});
    // Host-to-host copies are synchronous in both forms (S-COPY-1, S-COPY-2).
    EXPECT_EQ(std::vector<float>(c, c + count), values) << (async ? "async" : "sync");
  }
}

// cudaMemcpy of one float to pageable host memory, issued to the default
// stream `s` names (legacy or per-thread).
float synchronous_read(backend& b, const float* x, device_stream s) {
  float host = 0;
  b.memcpy({&host, x, sizeof(float), memory_kind::pageable_host, memory_kind::device, s.device,
            s.device, false, s});
  return host;
}

TEST_F(CudaBackend, SynchronousCopyOnTheLegacyStreamWaitsForBlockingStreams) {
  const device_stream blocking = make_stream(/*non_blocking=*/false);
  float* x = floats(1);
  produce_late(blocking, x, 4.0f);
  EXPECT_EQ(synchronous_read(b(), x, legacy()), 4.0f);
}

TEST_F(CudaBackend, SynchronousCopyOnThePerThreadStreamIgnoresOtherBlockingStreams) {
  // Proves that the per-thread form (cudaMemcpy_ptds) was called: the legacy
  // form would wait for the blocking stream (S-DEFAULT-1, S-DEFAULT-3).
  const device_stream blocking = make_stream(/*non_blocking=*/false);
  float* x = floats(1);
  produce_late(blocking, x, 4.0f, 200ms);
  EXPECT_EQ(synchronous_read(b(), x, per_thread()), 0.0f);
  b().synchronize_stream(blocking);
  EXPECT_EQ(synchronous_read(b(), x, per_thread()), 4.0f);
}

TEST_F(CudaBackend, AsyncCopyIsOrderedInItsStream) {
  const device_stream s = make_stream();
  float* x = floats(count);
  float* pinned = floats(count, memory_kind::pinned_host);
  spin(s, 30ms);
  launch(s, fill_args{x, count, 9.0f});
  b().memcpy({pinned, x, count * sizeof(float), memory_kind::pinned_host, memory_kind::device,
              device_, device_, true, s});
  b().synchronize_stream(s);
  EXPECT_EQ(std::vector<float>(pinned, pinned + count), std::vector<float>(count, 9.0f));
}

TEST_F(CudaBackend, MemsetSetsEveryByte) {
  for (const bool async : {false, true}) {
    const device_stream s = async ? make_stream() : legacy();
    auto* x = reinterpret_cast<unsigned char*>(floats(count));
    b().memset({x, 0xab, count * sizeof(float), memory_kind::device, async, s});
    b().memset({x, 0x01, 3, memory_kind::device, async, s});
    if (async) b().synchronize_stream(s);
    std::vector<unsigned char> host(count * sizeof(float));
    b().memcpy({host.data(), x, host.size(), memory_kind::pageable_host, memory_kind::device,
                device_, device_, false, legacy()});
    std::vector<unsigned char> expected(host.size(), 0xab);
    expected[0] = expected[1] = expected[2] = 0x01;
    EXPECT_EQ(host, expected) << (async ? "async" : "sync");
  }
}

// S-COPY-4: cudaMemset into pinned host memory or managed memory has
// completed when it returns, even behind a late producer on its stream.
TEST_F(CudaBackend, SynchronousMemsetOfPinnedOrManagedMemoryCompletesBeforeReturning) {
  for (const memory_kind kind : {memory_kind::pinned_host, memory_kind::managed}) {
    auto* target = reinterpret_cast<unsigned char*>(floats(count, kind));
    std::memset(target, 0, count * sizeof(float));
    spin(legacy(), 30ms);
    b().memset({target, 0x5a, count * sizeof(float), kind, false, legacy()});
    const auto last = count * sizeof(float) - 1;
    EXPECT_EQ(target[0], 0x5a) << "memory kind " << static_cast<int>(kind);
    EXPECT_EQ(target[last], 0x5a) << "memory kind " << static_cast<int>(kind);
  }
}

// S-COPY-1, S-DEFAULT-1: a host-to-host cudaMemcpy is an operation of the
// legacy default stream and returns when done, so the blocking stream's
// prior work has completed; a non-blocking stream's has not.
TEST_F(CudaBackend, SynchronousHostToHostCopyOnTheLegacyStreamWaitsForBlockingStreams) {
  for (const bool non_blocking : {false, true}) {
    const device_stream producer = make_stream(non_blocking);
    float* p = floats(1, memory_kind::pinned_host);
    float* a = floats(1, memory_kind::pageable_host);
    float* c = floats(1, memory_kind::pageable_host);
    p[0] = 0.0f;
    a[0] = 1.0f;
    produce_late(producer, p, 4.0f, 200ms);
    b().memcpy({c, a, sizeof(float), memory_kind::pageable_host, memory_kind::pageable_host,
                device_, device_, false, legacy()});
    EXPECT_EQ(c[0], 1.0f);
    EXPECT_EQ(p[0], non_blocking ? 0.0f : 4.0f) << (non_blocking ? "non-blocking" : "blocking");
    b().synchronize_stream(producer);
  }
}

// S-COPY-2, S-STREAM-1: cudaMemcpyAsync between host buffers is synchronous
// and runs after the prior work of its stream.
TEST_F(CudaBackend, AsyncHostToHostCopyRunsAfterItsStreamsPriorWork) {
  const device_stream s = make_stream();
  float* p = floats(1, memory_kind::pinned_host);
  float* out = floats(1, memory_kind::pageable_host);
  p[0] = 0.0f;
  out[0] = -1.0f;
  produce_late(s, p, 5.0f);
  b().memcpy({out, p, sizeof(float), memory_kind::pageable_host, memory_kind::pinned_host,
              device_, device_, true, s});
  EXPECT_EQ(out[0], 5.0f);
}

// S-COPY-1: a pageable upload synchronizes its stream before it stages the
// source.
TEST_F(CudaBackend, SynchronousPageableUploadWaitsForItsStream) {
  float* p = floats(1, memory_kind::pinned_host);
  float* d = floats(1);
  p[0] = 0.0f;
  produce_late(legacy(), p, 6.0f);
  const float source = 2.0f;
  b().memcpy({d, &source, sizeof(float), memory_kind::device, memory_kind::pageable_host, device_,
              device_, false, legacy()});
  EXPECT_EQ(p[0], 6.0f);
  EXPECT_EQ(read_one(d), 2.0f);
}

TEST_F(CudaBackend, ManagedMemoryIsVisibleToTheHostAfterSynchronize) {
  float* m = floats(count, memory_kind::managed);
  launch(legacy(), fill_args{m, count, 3.0f});
  b().synchronize_device(device_);
  EXPECT_EQ(std::vector<float>(m, m + count), std::vector<float>(count, 3.0f));
}

}  // namespace
}  // namespace streamsan::rt::testing
