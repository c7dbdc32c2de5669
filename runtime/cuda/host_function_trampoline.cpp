#include "runtime/cuda/host_function_trampoline.h"

#include <cstdio>
#include <exception>
#include <memory>
#include <utility>

#include "runtime/cuda/cuda_check.h"

namespace streamsan::rt::cuda {

namespace {

// A host function runs on a CUDA driver thread: an exception cannot travel
// back to the program, and letting it escape would terminate the process.
// It is reported on stderr instead, never dropped silently.
void run(const host_function& fn) noexcept {
  try {
    fn();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "streamsan: a host function threw (ignored on the CUDA callback thread): %s\n",
                 e.what());
  } catch (...) {
    std::fprintf(stderr,
                 "streamsan: a host function threw a non-standard exception (ignored on the CUDA "
                 "callback thread)\n");
  }
}

void CUDART_CB run_once(void* data) {
  const std::unique_ptr<host_function> fn(static_cast<host_function*>(data));
  run(*fn);
}

void CUDART_CB run_kept(void* data) { run(*static_cast<const host_function*>(data)); }

void CUDART_CB destroy_kept(void* data) { delete static_cast<host_function*>(data); }

// Captures `fn` into the graph being captured on `stream`; see Note [Who owns
// a host function].
void enqueue_captured(cudaStream_t stream, cudaGraph_t graph, host_function fn,
                      std::string_view objects) {
  auto owned = std::make_unique<host_function>(std::move(fn));
  host_function* raw = owned.get();
  cudaUserObject_t keeper{};
  check(cudaUserObjectCreate(&keeper, raw, destroy_kept, 1, cudaUserObjectNoDestructorSync),
        "cudaUserObjectCreate", [&] { return std::string(objects); });
  owned.release();  // the user object owns it now
  check(cudaGraphRetainUserObject(graph, keeper, 1, cudaGraphUserObjectMove),
        "cudaGraphRetainUserObject", [&] {
          (void)cudaUserObjectRelease(keeper, 1);  // deletes the function
          return std::string(objects);
        });
  check(cudaLaunchHostFunc(stream, run_kept, raw), "cudaLaunchHostFunc",
        [&] { return std::string(objects); });
}

}  // namespace

void enqueue_host_function(cudaStream_t stream, host_function fn, std::string_view objects) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  check(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph), "cudaStreamGetCaptureInfo",
        [&] { return std::string(objects); });
  if (status == cudaStreamCaptureStatusActive) {
    enqueue_captured(stream, graph, std::move(fn), objects);
    return;
  }
  auto owned = std::make_unique<host_function>(std::move(fn));
  check(cudaLaunchHostFunc(stream, run_once, owned.get()), "cudaLaunchHostFunc",
        [&] { return std::string(objects); });
  owned.release();  // run_once deletes it
}

}  // namespace streamsan::rt::cuda
