// A CUDA call from a static destructor, through the dispatcher with the real
// caching unwinder (issue #16, item 1). A program, not a gtest: what is
// tested happens after main returns.
//
// glibc's exit() destroys the main thread's thread_locals first, then runs
// the atexit handlers and static destructors. An application static whose
// destructor frees device memory therefore makes a CUDA call, which the
// library models with a stack, after every thread_local of the main thread
// is gone (Note [Per-thread state outlives the thread's thread_locals] in
// inject/stack/fast_unwinder.cpp). The capture must work, and the free must
// be recorded with the application's stack.
//
// Exit status 0 and "ok" on success; 1 with the reason otherwise (a crash,
// the failure this guards against, ends the program with SIGSEGV; a read of
// destroyed tables shows under valgrind or a sanitizer build).
#include <cstdio>
#include <cstdlib>

#include "inject/capture/api_params.h"
#include "inject/capture/dispatcher.h"
#include "tests/inject/capture_sink.h"
#include "tests/inject/fake_driver.h"

namespace streamsan::injection {
namespace {

constexpr std::uint64_t buffer_address = 0x10000;

// Like the session, everything lives until the process ends.
struct sanitizer {
  recorder rec{{.capture_stacks = true, .stack_depth = 16}};
  fake_driver driver;
  capture_sink sink;
  cuda_model model{rec, driver};
  unwinder_call_sites sites{16};
  api_dispatcher dispatcher{model, sites};
  sanitizer() {
    rec.add_sink(sink);
    dispatcher.start();
  }
};
sanitizer* the_sanitizer = nullptr;

template <class Params>
void runtime_call(std::uint32_t cbid, const Params& p) {
  const cudaError_t ok = cudaSuccess;
  the_sanitizer->dispatcher.dispatch({api_domain::runtime, cbid, api_site::entry, &p, nullptr,
                                      nullptr});
  the_sanitizer->dispatcher.dispatch({api_domain::runtime, cbid, api_site::exit, &p, &ok,
                                      nullptr});
}

[[noreturn]] void fail(const char* why) {
  std::fprintf(stderr, "exit_capture_test: %s\n", why);
  std::fflush(stderr);
  std::_Exit(1);
}

// The application's static: its destructor frees device memory.
struct device_buffer {
  ~device_buffer() {
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
                 cudaFree_v3020_params{reinterpret_cast<void*>(buffer_address)});
    const auto frees = the_sanitizer->sink.all<free_record>();
    if (frees.size() != 1) fail("the free in a static destructor was not recorded");
    const auto& header = the_sanitizer->sink.last<free_record>().header;
    if (is_none(header.stack)) fail("the free in a static destructor has no stack");
    std::puts("ok");
  }
};

// A static constructed before the library started (before main here):
// destroyed after the report's atexit handler stopped the callbacks, and
// after the library's own statics. Its CUDA call still reaches the
// dispatcher, which keeps the call nesting (Note [Nesting is tracked while
// stopped]) through tables that must still exist, and models nothing.
struct early_device_buffer {
  ~early_device_buffer() {
    if (the_sanitizer == nullptr) return;
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
                 cudaFree_v3020_params{reinterpret_cast<void*>(buffer_address + 0x1000)});
    if (the_sanitizer->sink.all<free_record>().size() != 1) fail("a free after stop() was recorded");
    std::puts("ok (after the report)");
  }
};
early_device_buffer early_buffer;

__attribute__((noinline)) void allocate() {
  void* ptr = reinterpret_cast<void*>(buffer_address);
  runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, cudaMalloc_v3020_params{&ptr, 256});
}

}  // namespace
}  // namespace streamsan::injection

int main() {
  using namespace streamsan::injection;
  the_sanitizer = new sanitizer;
  // The session's report at exit, registered when the library starts.
  std::atexit([] { the_sanitizer->dispatcher.stop(); });
  // The first capture on the main thread makes its per-thread unwinder state.
  allocate();
  if (the_sanitizer->sink.all<streamsan::alloc_record>().size() != 1) fail("no allocation");
  // Constructed after the library started, like a function-local static the
  // program makes after its first CUDA call: destroyed before the session's
  // report at exit, while callbacks are still on.
  static device_buffer buffer;
  return 0;
}
