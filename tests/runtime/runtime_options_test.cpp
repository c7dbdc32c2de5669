#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

using testing::expect_error;

// Sets an environment variable for the scope and restores it.
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~scoped_env() {
    if (old_) ::setenv(name_, old_->c_str(), 1); else ::unsetenv(name_);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(RuntimeOptions, TheEnvironmentChoosesTheOptions) {
  const scoped_env a("STREAMSAN", "1");
  const scoped_env b("STREAMSAN_BACKEND", "sim");
  const scoped_env c("STREAMSAN_SIM_SEED", "42");
  const scoped_env d("STREAMSAN_SIM_POLICY", "eager");
  const scoped_env e("STREAMSAN_DEFAULT_STREAM", "per-thread");
  const scoped_env f("STREAMSAN_SYNC_DEBUG", "warn");
  const scoped_env g("STREAMSAN_STACKS", "0");
  const scoped_env h("STREAMSAN_TRACE", "/tmp/x.streamsan-trace");
  const scoped_env i("STREAMSAN_COLOR", "always");
  const scoped_env j("STREAMSAN_STACK_DEPTH", "3");
  const scoped_env k("STREAMSAN_RAW_STACKS", "1");
  const auto o = options_from_environment();
  EXPECT_EQ(o.report_color, color_mode::always);
  EXPECT_EQ(o.report_stack_depth, 3u);
  EXPECT_TRUE(o.raw_stacks);
  EXPECT_TRUE(o.sanitize);
  EXPECT_EQ(o.backend, backend_kind::sim);
  EXPECT_EQ(o.sim.seed, 42u);
  EXPECT_EQ(o.sim.policy, sim_policy::eager);
  EXPECT_TRUE(o.per_thread_default_stream);
  EXPECT_EQ(o.sync_debug, sync_debug_mode::warn);
  EXPECT_FALSE(o.capture_stacks);
  EXPECT_EQ(o.trace_path, "/tmp/x.streamsan-trace");
}

TEST(RuntimeOptions, MalformedValuesNameTheVariable) {
  {
    const scoped_env e("STREAMSAN_BACKEND", "gpu");
    expect_error<usage_error>([] { (void)options_from_environment(); },
                              "STREAMSAN_BACKEND: unknown backend 'gpu' (expected sim, cuda or "
                              "auto)");
  }
  {
    const scoped_env e("STREAMSAN_SIM_SEED", "12ab");
    expect_error<usage_error>([] { (void)options_from_environment(); },
                              "STREAMSAN_SIM_SEED=12ab: expected a non-negative integer");
  }
  {
    const scoped_env e("STREAMSAN", "maybe");
    expect_error<usage_error>([] { (void)options_from_environment(); },
                              "STREAMSAN=maybe: expected 1 or 0");
  }
  {
    const scoped_env e("STREAMSAN_COLOR", "blue");
    expect_error<usage_error>([] { (void)options_from_environment(); },
                              "STREAMSAN_COLOR=blue: expected auto, always or never");
  }
  {
    const scoped_env e("STREAMSAN_STACK_DEPTH", "5000");
    expect_error<usage_error>([] { (void)options_from_environment(); },
                              "STREAMSAN_STACK_DEPTH=5000: expected 0..1000");
  }
}

TEST(RuntimeOptions, TheRuntimeStartsOnFirstUse) {
  shutdown();
  EXPECT_FALSE(initialized());
  EXPECT_GT(device_count(), 0);
  EXPECT_TRUE(initialized());
  shutdown();
  EXPECT_FALSE(initialized());
}

TEST(RuntimeOptions, AutomaticIsTheSimWithoutAGpu) {
  if (cuda_device_present()) GTEST_SKIP() << "a GPU is visible";
  auto options = testing::test_options();
  options.backend = backend_kind::automatic;
  initialize(options);
  EXPECT_EQ(backend_name(), "sim");
  shutdown();
}

}  // namespace
}  // namespace streamsan::rt
