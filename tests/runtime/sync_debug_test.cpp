#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

using testing::expect_error;

class SyncDebug : public testing::runtime_test {
 protected:
  void SetUp() override {
    testing::runtime_test::SetUp();
    set_warning_handler([this](std::string_view m) { warnings.emplace_back(m); });
  }
  void TearDown() override {
    set_warning_handler({});
    testing::runtime_test::TearDown();
  }
  std::vector<std::string> warnings;
};

TEST_F(SyncDebug, OffReportsNothing) {
  stream s;
  s.synchronize();
  synchronize();
  EXPECT_EQ(get_sync_debug_mode(), sync_debug_mode::off);
  EXPECT_TRUE(warnings.empty());
}

TEST_F(SyncDebug, WarnReportsEachSynchronizingCall) {
  set_sync_debug_mode(sync_debug_mode::warn);
  stream s;
  event e;
  e.record(s);
  auto dev = allocate_device(64);
  auto host = allocate_pinned_host(64);
  s.synchronize();
  e.synchronize();
  synchronize(0);
  memcpy(host, dev);
  const auto dev_id = dev.alloc();
  dev.free();
  empty_cache();
  const std::vector<std::string> expected{
      "streamsan: warning: synchronizing operation: " + s.name() + ".synchronize()",
      "streamsan: warning: synchronizing operation: " + e.name() + ".synchronize()",
      "streamsan: warning: synchronizing operation: synchronize(device 0)",
      "streamsan: warning: synchronizing operation: memcpy " + to_string(dev_id) +
          " (device) -> " + to_string(host.alloc()) + " (pinned host)",
      "streamsan: warning: synchronizing operation: freeing " + to_string(dev_id) +
          " (cudaFree synchronizes the device)",
      "streamsan: warning: synchronizing operation: empty_cache()",
  };
  EXPECT_EQ(warnings, expected);
}

TEST_F(SyncDebug, AsynchronousCallsAndQueriesAreNotReported) {
  set_sync_debug_mode(sync_debug_mode::warn);
  stream s;
  auto a = allocate_device(64);
  auto b = allocate_device(64);
  auto host = allocate_pinned_host(64);
  memcpy(b, a);  // device to device: no host synchronization
  memcpy_async(host, a, s);
  memset_async(a, 0, s);
  launch(s, kernels::spin{});
  (void)s.query();
  (void)s.record_event().query();
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  warnings.clear();
  set_sync_debug_mode(sync_debug_mode::off);
  s.synchronize();
}

TEST_F(SyncDebug, ErrorModeRefusesTheCall) {
  stream s;
  set_sync_debug_mode(sync_debug_mode::error);
  expect_error<sync_debug_error>([&] { s.synchronize(); },
                                 s.name() + ".synchronize(): a synchronizing operation, refused by "
                                            "sync debug mode 'error'");
  set_sync_debug_mode(sync_debug_mode::off);
  s.synchronize();
}

TEST_F(SyncDebug, TheModeComesFromTheOptions) {
  auto options = testing::test_options();
  options.sync_debug = sync_debug_mode::error;
  initialize(options);
  EXPECT_EQ(get_sync_debug_mode(), sync_debug_mode::error);
  EXPECT_THROW(synchronize(), sync_debug_error);
}

}  // namespace
}  // namespace streamsan::rt
