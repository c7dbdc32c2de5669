// The benchmarks' controls as a benchmark reaches them: exported by
// libstreamsan_inject.so, dlopened as the driver opens it, over the fake
// Sanitizer API and driver (Note [Launches paused for a benchmark] in
// inject/sanitizer_api/sanitizer_source.cpp). One process holds one session,
// so one test walks through the cases in order.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sanitizer.h>

#include <cstdlib>
#include <string>

#include "tests/inject/fake_sanitizer_api.h"

namespace {

using control_fn = int (*)(int);

bool runtime_launch_callback_off() {
  return fake_sanitizer_callback_switched_off(SANITIZER_CB_DOMAIN_RUNTIME_API,
                                              SANITIZER_CBID_RUNTIME_API_cudaLaunchKernel);
}

bool driver_launch_callback_off() {
  return fake_sanitizer_callback_switched_off(SANITIZER_CB_DOMAIN_DRIVER_API,
                                              SANITIZER_CBID_DRIVER_API_cuLaunchKernel);
}

bool driver_event_record_callback_off() {
  return fake_sanitizer_callback_switched_off(SANITIZER_CB_DOMAIN_DRIVER_API,
                                              SANITIZER_CBID_DRIVER_API_cuEventRecord);
}

TEST(BenchControls, ActOnlyWhenTheRunAskedForThem) {
#if defined(__SANITIZE_THREAD__)
  // A process under ThreadSanitizer gets the bridge, which takes its calls
  // from CUPTI: there is no Sanitizer API source to control.
  GTEST_SKIP() << "the ThreadSanitizer bridge replaces the Sanitizer API source";
#endif
  // The driver loads the library (here the fake driver, from LD_LIBRARY_PATH).
  ASSERT_NE(::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL), nullptr) << ::dlerror();
  const char* path = std::getenv("STREAMSAN_INJECTION_LIB");
  ASSERT_NE(path, nullptr) << "set STREAMSAN_INJECTION_LIB to libstreamsan_inject.so";
  void* library = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << ::dlerror();
  const auto pause = reinterpret_cast<control_fn>(
      ::dlsym(library, "streamsan_inject_bench_pause_launches"));
  const auto runtime_callbacks = reinterpret_cast<control_fn>(
      ::dlsym(library, "streamsan_inject_bench_runtime_launch_callbacks"));
  const auto launch_callbacks = reinterpret_cast<control_fn>(
      ::dlsym(library, "streamsan_inject_bench_launch_callbacks"));
  ASSERT_NE(pause, nullptr);
  ASSERT_NE(runtime_callbacks, nullptr);
  ASSERT_NE(launch_callbacks, nullptr);
  const auto subscribed = reinterpret_cast<control_fn>(
      ::dlsym(library, "streamsan_inject_bench_subscribed"));
  ASSERT_NE(subscribed, nullptr);

  ::setenv("STREAMSAN_BENCH_PAUSE", "1", 1);
  EXPECT_EQ(pause(1), 0) << "no session before CUDA starts it";
  const auto initialize = reinterpret_cast<int (*)()>(::dlsym(library, "InitializeInjection"));
  ASSERT_NE(initialize, nullptr);
  ASSERT_EQ(initialize(), 1);

  ::unsetenv("STREAMSAN_BENCH_PAUSE");
  EXPECT_EQ(pause(1), 0);
  EXPECT_EQ(runtime_callbacks(1), 0);
  EXPECT_EQ(launch_callbacks(0), 0);
  EXPECT_EQ(subscribed(0), 0);
  EXPECT_TRUE(fake_sanitizer_subscribed());
  EXPECT_FALSE(driver_launch_callback_off());  // untouched
  EXPECT_TRUE(runtime_launch_callback_off());  // the default, untouched
  ::setenv("STREAMSAN_BENCH_PAUSE", "yes", 1);
  EXPECT_EQ(runtime_callbacks(1), 0);

  ::setenv("STREAMSAN_BENCH_PAUSE", "1", 1);
  EXPECT_EQ(runtime_callbacks(1), 1);
  EXPECT_FALSE(runtime_launch_callback_off());
  EXPECT_EQ(runtime_callbacks(0), 1);
  EXPECT_TRUE(runtime_launch_callback_off());
  EXPECT_EQ(pause(1), 1);
  EXPECT_EQ(pause(0), 1);
  // Note [Launches unseen for a benchmark]: the driver's launch callbacks
  // only; an event record keeps its callback.
  EXPECT_EQ(launch_callbacks(0), 1);
  EXPECT_TRUE(driver_launch_callback_off());
  EXPECT_FALSE(driver_event_record_callback_off());
  EXPECT_EQ(launch_callbacks(1), 1);
  EXPECT_FALSE(driver_launch_callback_off());
  // Note [The subscription dropped for a benchmark]: taken again as
  // enable() made it; the launch switch is refused meanwhile.
  EXPECT_EQ(subscribed(0), 1);
  EXPECT_FALSE(fake_sanitizer_subscribed());
  EXPECT_EQ(launch_callbacks(0), 0);
  EXPECT_EQ(subscribed(1), 1);
  EXPECT_TRUE(fake_sanitizer_subscribed());
  EXPECT_TRUE(runtime_launch_callback_off());
  EXPECT_FALSE(driver_launch_callback_off());
}

}  // namespace
