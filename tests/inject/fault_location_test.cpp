// Note [Where a fault happened]: the object of the faulting instruction and
// the frames below it, as OBJECT+0xOFFSET, and whose the object is.
#include "inject/session/fault_location.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace streamsan::injection {
namespace {

TEST(FaultLocation, OwnersAreToldByTheObjectsName) {
  EXPECT_EQ(owner_of("/opt/streamsan/lib/libstreamsan_inject.so"), object_owner::streamsan);
  EXPECT_EQ(owner_of("libstreamsan_inject.so"), object_owner::streamsan);
  EXPECT_EQ(owner_of("/usr/local/cuda/compute-sanitizer/libsanitizer-public.so"),
            object_owner::sanitizer_api);
  EXPECT_EQ(owner_of("/usr/lib/x86_64-linux-gnu/libcuda.so.1"), object_owner::program);
  EXPECT_EQ(owner_of("/home/me/libstreamsan_inject.so.d/app"), object_owner::program);
  EXPECT_EQ(owner_of(""), object_owner::program);
}

void write_stderr(const char* text) noexcept {
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void say_and_leave(int, siginfo_t* info, void* ucontext) {
  say_fault_location(info, ucontext, write_stderr);
  ::_exit(3);
}

// A real fault (a store to a page with no access), in this test's own
// object, from a function that cannot be inlined into its caller.
[[gnu::noinline]] void store_into(volatile int* p) { *p = 1; }

[[noreturn]] void fault_here() {
  warm_fault_location();
  struct sigaction action {};
  action.sa_sigaction = say_and_leave;
  action.sa_flags = SA_SIGINFO;
  ::sigaction(SIGSEGV, &action, nullptr);
  void* page = ::mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  store_into(static_cast<volatile int*>(page));
  ::_exit(4);
}

TEST(FaultLocation, AFaultIsPlacedInItsObjectWithTheFramesBelowIt) {
  EXPECT_EXIT(fault_here(), ::testing::ExitedWithCode(3),
              "streamsan: the fault \\(address 0x[0-9a-f]+\\) was at "
              "[^ ]*injection_session_tests\\+0x[0-9a-f]+\n"
              "streamsan:   called from [^ ]*injection_session_tests\\+0x[0-9a-f]+\n");
}

}  // namespace
}  // namespace streamsan::injection
