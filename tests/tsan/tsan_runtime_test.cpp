// Finding ThreadSanitizer in the process, and refusing a runtime whose
// interface this bridge does not know (Note [TSan interface versions]).
#include "sanitizer/tsan/tsan_runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace streamsan::tsan {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

void stub() {}

const std::set<std::string> version_1 = {
    "__tsan_init",           "__tsan_get_current_fiber", "__tsan_create_fiber",
    "__tsan_destroy_fiber",  "__tsan_switch_to_fiber",   "__tsan_set_fiber_name",
    "__tsan_acquire",        "__tsan_release",           "__tsan_atomic64_store",
    "__tsan_read_range",     "__tsan_write_range",       "__tsan_read_range_pc",
    "__tsan_write_range_pc", "__tsan_func_entry",        "__tsan_func_exit",
    "__tsan_ignore_thread_begin", "__tsan_ignore_thread_end",
};

// A process whose symbols are `names`, all in `module`.
symbol_source process_with(std::set<std::string> names, std::string module,
                           std::string executable = "/usr/bin/app") {
  return {
      [names](const char* name) -> void* {
        return names.count(name) ? reinterpret_cast<void*>(&stub) : nullptr;
      },
      [module](const void*) { return module; },
      [executable] { return executable; },
  };
}

TEST(TsanRuntime, AbsentWithoutTsanInit) {
  auto names = version_1;
  names.erase("__tsan_init");
  const auto r = probe_tsan_runtime(process_with(names, "/lib/libtsan.so.2"));
  EXPECT_EQ(r.status, probe_status::absent);
  EXPECT_TRUE(r.message.empty());
}

TEST(TsanRuntime, GccRuntimesOfKnownVersions) {
  for (const std::string so : {"/usr/lib/x86_64-linux-gnu/libtsan.so.2.0.0", "/usr/lib/libtsan.so.0"}) {
    const auto r = probe_tsan_runtime(process_with(version_1, so));
    EXPECT_EQ(r.status, probe_status::usable) << so;
    EXPECT_THAT(r.runtime, HasSubstr("(GCC)"));
    EXPECT_NE(r.api.create_fiber, nullptr);
    EXPECT_NE(r.api.write_range_pc, nullptr);
  }
}

TEST(TsanRuntime, ClangStaticRuntimeInTheExecutable) {
  const auto r = probe_tsan_runtime(process_with(version_1, "/work/app", "/work/app"));
  EXPECT_EQ(r.status, probe_status::usable);
  EXPECT_EQ(r.runtime, "the executable (a static runtime)");
}

TEST(TsanRuntime, ClangSharedRuntime) {
  const auto r = probe_tsan_runtime(
      process_with(version_1, "/usr/lib/llvm-18/lib/clang/18/lib/linux/libclang_rt.tsan-x86_64.so"));
  EXPECT_EQ(r.status, probe_status::usable);
  EXPECT_THAT(r.runtime, HasSubstr("(Clang)"));
}

TEST(TsanRuntime, UnknownLibtsanVersionIsRefusedInOneLine) {
  const auto r = probe_tsan_runtime(process_with(version_1, "/opt/gcc-99/lib64/libtsan.so.7"));
  EXPECT_EQ(r.status, probe_status::refused);
  EXPECT_EQ(r.message,
            "streamsan: ThreadSanitizer runtime libtsan.so.7 (GCC) has interface version 7 "
            "(libtsan.so.7); this bridge knows libtsan.so.0 and libtsan.so.2; the "
            "ThreadSanitizer bridge stays off (host accesses are seen only through annotations)");
  EXPECT_THAT(r.message, Not(HasSubstr("\n")));
}

TEST(TsanRuntime, MissingEntryPointIsRefused) {
  auto names = version_1;
  names.erase("__tsan_create_fiber");
  const auto r = probe_tsan_runtime(process_with(names, "/lib/libtsan.so.2"));
  EXPECT_EQ(r.status, probe_status::refused);
  EXPECT_THAT(r.message, HasSubstr("lacks __tsan_create_fiber"));
  EXPECT_EQ(r.api.acquire, nullptr);  // nothing half-bound
}

TEST(TsanRuntime, OptionalEntryPointsMayBeMissing) {
  auto names = version_1;
  names.erase("__tsan_set_fiber_name");
  names.erase("__tsan_read_range_pc");
  names.erase("__tsan_write_range_pc");
  const auto r = probe_tsan_runtime(process_with(names, "/lib/libtsan.so.2"));
  EXPECT_EQ(r.status, probe_status::usable);
  EXPECT_EQ(r.api.set_fiber_name, nullptr);
}

TEST(TsanRuntime, SonameVersions) {
  EXPECT_EQ(libtsan_soname_version("libtsan.so.2"), 2);
  EXPECT_EQ(libtsan_soname_version("libtsan.so.2.0.0"), 2);
  EXPECT_EQ(libtsan_soname_version("libtsan.so.0"), 0);
  EXPECT_EQ(libtsan_soname_version("libtsan.so"), -1);
  EXPECT_EQ(libtsan_soname_version("libtsan.so.x"), -1);
  EXPECT_EQ(libtsan_soname_version("libasan.so.8"), -1);
}

TEST(TsanRuntime, ThisTestIsNotBuiltWithTsan) {
  // The probe of the real process finds nothing in a normal build.
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "built with -fsanitize=thread";
#else
  EXPECT_EQ(probe_tsan_runtime().status, probe_status::absent);
#endif
}

}  // namespace
}  // namespace streamsan::tsan
