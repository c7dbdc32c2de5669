// End to end: programs on the runtime, checked by the live engine
// (sanitizer mode). A missing synchronization is reported; with the
// synchronization added, nothing is.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

constexpr std::uint64_t bytes = 256 * sizeof(float);

class Sanitizer : public ::testing::Test {
 protected:
  void SetUp() override {
    auto options = testing::test_options();
    options.sanitize = true;
    options.print_diagnostics = false;
    initialize(options);
  }
  void TearDown() override { shutdown(); }

  static std::size_t count(diagnostic_kind kind) {
    const auto found = sanitizer_diagnostics();
    return static_cast<std::size_t>(
        std::count_if(found.begin(), found.end(), [&](const diagnostic& d) { return d.kind == kind; }));
  }
};

// The canonical example (S-STREAM-2): the default stream fills A, a side
// stream sums it.
void fill_then_sum(bool synchronized) {
  auto a = allocate_device(bytes);
  auto sum = allocate_device(sizeof(float));
  stream side;
  launch(current_stream(), kernels::fill{a, 1.0f});
  if (synchronized) side.wait_stream(current_stream());
  launch(side, kernels::reduce_sum{a, sum});
  side.synchronize();
  synchronize();
}

// An invalidated capture still ends: work issued to the stream afterwards
// executes and is checked (S-GRAPH-1).
TEST_F(Sanitizer, WorkAfterAnInvalidatedCaptureIsChecked) {
  auto a = allocate_device(bytes);
  auto sum = allocate_device(sizeof(float));
  stream capturing;
  stream side;
  {
    graph g;
    g.capture_begin(capturing);
    EXPECT_THROW(capturing.synchronize(), usage_error);
    EXPECT_THROW(g.capture_end(), cuda_error);
  }
  launch(capturing, kernels::fill{a, 1.0f});
  launch(side, kernels::reduce_sum{a, sum});
  synchronize();
  EXPECT_EQ(count(diagnostic_kind::stream_race), 1u);
}

TEST_F(Sanitizer, IsOnInSanitizerMode) {
  EXPECT_TRUE(sanitizing());
  EXPECT_TRUE(logging());
}

TEST_F(Sanitizer, AMissingWaitStreamIsAStreamRace) {
  fill_then_sum(false);
  const auto found = sanitizer_diagnostics();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].kind, diagnostic_kind::stream_race);
  EXPECT_EQ(found[0].hazard_kind, hazard::read_after_write);
  EXPECT_EQ(found[0].current.op, operation_kind::kernel);
  ASSERT_TRUE(found[0].previous.has_value());
  EXPECT_EQ(found[0].previous->stream, legacy_default_stream().id());
}

TEST_F(Sanitizer, WithWaitStreamThereIsNoReport) {
  fill_then_sum(true);
  EXPECT_TRUE(sanitizer_diagnostics().empty());
}

TEST_F(Sanitizer, ReadingACopyBeforeSynchronizingIsAHostDeviceRace) {
  stream s;
  auto dev = allocate_device(bytes);
  auto host = allocate_pinned_host(bytes);
  launch(s, kernels::fill{dev, 2.0f});
  memcpy_async(host, dev, s);
  (void)host_read<float>(host);  // S-COPY-2: not yet synchronized
  s.synchronize();
  EXPECT_EQ(count(diagnostic_kind::host_device_race), 1u);
}

TEST_F(Sanitizer, ReadingACopyAfterSynchronizingIsClean) {
  stream s;
  auto dev = allocate_device(bytes);
  auto host = allocate_pinned_host(bytes);
  launch(s, kernels::fill{dev, 2.0f});
  memcpy_async(host, dev, s);
  s.synchronize();
  EXPECT_EQ(host_read<float>(host)[0], 2.0f);
  EXPECT_TRUE(sanitizer_diagnostics().empty());
}

// A block used on a second stream, declared with record_stream, and reused
// on its own stream once the second stream's work completed.
void reuse_after_side_stream_use() {
  stream s1;
  stream s2;
  auto a = caching_allocate(bytes, s1);
  launch(s1, kernels::fill{a, 1.0f});
  s2.wait_stream(s1);
  launch(s2, kernels::scale{a, 2.0f});
  a.record_stream(s2);
  a.free();
  s2.synchronize();  // lets the allocator see s2's event complete
  auto b = caching_allocate(bytes, s1);
  launch(s1, kernels::fill{b, 3.0f});
  s1.synchronize();
}

// Without record_stream the block is reusable at once on its own stream: the
// reuse races with the second stream's use.
TEST_F(Sanitizer, AMissingRecordStreamIsARaceOnTheReusedBytes) {
  initialize([] {
    auto o = testing::test_options(1, 0);
    o.sanitize = true;
    o.print_diagnostics = false;
    return o;
  }());
  stream s1;
  stream s2;
  auto a = caching_allocate(bytes, s1);
  launch(s1, kernels::fill{a, 1.0f});
  s2.wait_stream(s1);
  launch(s2, kernels::scale{a, 2.0f});
  a.free();  // no record_stream: immediately reusable on s1
  auto b = caching_allocate(bytes, s1);
  launch(s1, kernels::fill{b, 3.0f});
  synchronize();
  EXPECT_EQ(count(diagnostic_kind::stream_race), 1u);
}

TEST_F(Sanitizer, RecordStreamMakesTheReuseSafe) {
  reuse_after_side_stream_use();
  EXPECT_TRUE(sanitizer_diagnostics().empty());
}

TEST_F(Sanitizer, RecordingAnEventOnAnotherDeviceIsRefusedBeforeTheLog) {
  STREAMSAN_REQUIRE_DEVICES(2);
  event e;
  stream zero({.device = 0});
  stream one({.device = 1});
  e.record(zero);
  EXPECT_THROW(e.record(one), usage_error);
  EXPECT_TRUE(sanitizer_diagnostics().empty());
}

TEST_F(Sanitizer, WaitingOnANeverRecordedEventIsReported) {
  stream s;
  event e;
  s.wait_event(e);  // S-EVENT-3: orders nothing
  EXPECT_EQ(count(diagnostic_kind::unrecorded_event), 1u);
}

TEST_F(Sanitizer, DiagnosticsArePrintedWhenFoundAndSummarizedAtShutdown) {
  auto options = testing::test_options();
  options.sanitize = true;
  options.capture_stacks = true;
  initialize(options);
  ::testing::internal::CaptureStderr();
  fill_then_sum(false);
  const auto live = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(live.find("WARNING: streamsan: stream-race (read-after-write)"), std::string::npos)
      << live;
  ::testing::internal::CaptureStderr();
  shutdown();
  const auto summary = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(summary.find("streamsan: reported 1 warning"), std::string::npos) << summary;
}

TEST_F(Sanitizer, TheTraceFileIsWritten) {
  const auto path = std::filesystem::temp_directory_path() / "streamsan-runtime-test.streamsan-trace";
  std::filesystem::remove(path);
  auto options = testing::test_options();
  options.trace_path = path.string();
  initialize(options);
  EXPECT_TRUE(logging());
  EXPECT_FALSE(sanitizing());
  fill_then_sum(false);
  shutdown();
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_GT(std::filesystem::file_size(path), 64u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace streamsan::rt
