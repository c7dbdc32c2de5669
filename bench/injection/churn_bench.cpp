// Memory of the injection library under stream and thread churn (issue #16,
// item 2), without CUPTI or a GPU: a fake feed of runtime callbacks through
// the dispatcher, the real caching unwinder and the recorder.
//
//   streams: cycles of cudaStreamCreate, a kernel launch on the stream,
//            cudaStreamSynchronize, cudaStreamDestroy; every stream gets a
//            new handle (a driver that never recycles one: the worst case).
//   threads: threads that each launch on their per-thread default stream
//            (cudaLaunchKernel_ptsz), synchronize it and end.
//
// Prints the process's resident memory and what the model and the unwinder
// keep after each step (1k, 10k, 100k stream cycles; 1k, 10k threads), and
// exits 1 unless the last step's resident memory is within 10% of the first
// step's of that kind and the model and the unwinder keep no more than the
// live streams and threads need (and 1024 tombstones of destroyed stream
// handles: Note [Handles are translated at the boundary]). `--engine` also
// feeds the live engine, whose own memory bound is docs/engine.md's
// (without the engine's slot retirement it grows with every stream).
// Last, the heap the injection side holds per live stream, allocation and
// thread (mallinfo2), the figures of docs/injection.md.
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "inject/capture/api_params.h"
#include "inject/capture/dispatcher.h"
#include "inject/stack/fast_unwinder.h"
#include "sanitizer/engine/engine.h"
#include "tests/inject/fake_driver.h"

namespace streamsan::injection {
namespace {

constexpr std::uintptr_t kernel_handle = 0xabc;
constexpr std::uint64_t buffer_address = 0x10000;
constexpr std::uint64_t memory_limit_kib = 1024 * 1024;

std::uint64_t resident_kib() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) / 1024;
}

class counting_sink final : public record_sink {
 public:
  void on_record(const record&) override { ++records; }
  std::uint64_t records = 0;
};

struct feed {
  recorder rec{{.capture_stacks = true, .stack_depth = 16}};
  counting_sink counter;
  std::unique_ptr<engine> eng;
  fake_driver driver;
  cuda_model model{rec, driver};
  unwinder_call_sites sites{16};
  api_dispatcher dispatcher{model, sites};

  explicit feed(bool with_engine) {
    rec.add_sink(counter);
    if (with_engine) {
      eng = std::make_unique<engine>();
      rec.add_sink(*eng);
    }
    driver.kernels[kernel_handle] = kernel_description{"_Z4fillPf", {{0, 8}}, true};
    dispatcher.start();
    void* ptr = reinterpret_cast<void*>(buffer_address);
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, cudaMalloc_v3020_params{&ptr, 4096});
  }

  template <class Params>
  void runtime_call(std::uint32_t cbid, const Params& p) {
    const cudaError_t ok = cudaSuccess;
    dispatcher.dispatch({api_domain::runtime, cbid, api_site::entry, &p, nullptr, nullptr});
    dispatcher.dispatch({api_domain::runtime, cbid, api_site::exit, &p, &ok, nullptr});
  }

  void launch(cudaStream_t stream, bool per_thread) {
    std::uint64_t arg = buffer_address;
    void* args[] = {&arg};
    const cudaLaunchKernel_v7000_params p{reinterpret_cast<const void*>(&resident_kib),
                                          {}, {}, args, 0, stream};
    cuLaunchKernel_params nested{};
    nested.f = reinterpret_cast<CUfunction>(kernel_handle);
    nested.hStream = reinterpret_cast<CUstream>(stream);
    nested.kernelParams = args;
    const std::uint32_t cbid = per_thread ? CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000
                                          : CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    const cudaError_t ok = cudaSuccess;
    const CUresult driver_ok = CUDA_SUCCESS;
    dispatcher.dispatch({api_domain::runtime, cbid, api_site::entry, &p, nullptr, nullptr});
    const api_call driver_entry{api_domain::driver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                api_site::entry, &nested, nullptr, nullptr};
    dispatcher.dispatch(driver_entry);
    dispatcher.dispatch({api_domain::driver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                         api_site::exit, &nested, &driver_ok, nullptr});
    dispatcher.dispatch({api_domain::runtime, cbid, api_site::exit, &p, &ok, nullptr});
  }

  void stream_cycle(std::uintptr_t handle) {
    auto stream = reinterpret_cast<cudaStream_t>(handle);
    cudaStream_t out = stream;
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020,
                 cudaStreamCreate_v3020_params{&out});
    launch(stream, false);
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                 cudaStreamSynchronize_v3020_params{stream});
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050,
                 cudaStreamDestroy_v5050_params{stream});
  }

  void create_stream(std::uintptr_t handle) {
    cudaStream_t out = reinterpret_cast<cudaStream_t>(handle);
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020,
                 cudaStreamCreate_v3020_params{&out});
  }

  void allocate(std::uint64_t address) {
    void* ptr = reinterpret_cast<void*>(address);
    runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, cudaMalloc_v3020_params{&ptr, 256});
  }

  void thread_cycle() {
    std::thread([this] {
      launch(nullptr, true);
      runtime_call(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
                   cudaStreamSynchronize_v3020_params{nullptr});
    }).join();
  }

  void print(const char* what, std::uint64_t done, std::uint64_t rss) const {
    const auto f = model.footprint();
    std::printf("%-8s %8llu %10llu %15zu %19zu %16zu %12llu\n", what,
                static_cast<unsigned long long>(done), static_cast<unsigned long long>(rss),
                f.stream_handles, f.per_thread_streams, live_unwinder_states(),
                static_cast<unsigned long long>(counter.records));
  }
};

std::uint64_t heap_bytes() { return mallinfo2().uordblks; }

// The heap the injection side holds per live stream, allocation and thread
// (docs/injection.md, "Memory").
void print_per_live_object() {
  feed f(false);
  constexpr int objects = 10000;
  auto before = heap_bytes();
  for (int i = 1; i <= objects; ++i) f.create_stream(0x100000 + i * 0x40);
  std::printf("heap per live stream: %.0f bytes\n",
              static_cast<double>(heap_bytes() - before) / objects);
  before = heap_bytes();
  for (int i = 1; i <= objects; ++i) f.allocate(0x7f0000000000 + i * 0x1000ull);
  std::printf("heap per live allocation: %.0f bytes\n",
              static_cast<double>(heap_bytes() - before) / objects);
  constexpr int threads = 32;
  std::latch recorded(threads), done(1);
  std::vector<std::thread> pool;
  before = heap_bytes();
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&] {
      f.launch(nullptr, true);
      recorded.count_down();
      done.wait();
    });
  }
  recorded.wait();
  const auto during = heap_bytes();
  done.count_down();
  for (auto& t : pool) t.join();
  std::printf("heap per live thread that made CUDA calls: %.0f bytes\n",
              static_cast<double>(during - before) / threads);
}

// Whether `last` is within 10% of `first`.
bool flat(const char* what, std::uint64_t first, std::uint64_t last) {
  const bool ok = last * 10 <= first * 11;
  std::printf("%s: resident %llu KiB -> %llu KiB (%+.1f%%): %s\n", what,
              static_cast<unsigned long long>(first), static_cast<unsigned long long>(last),
              100.0 * (static_cast<double>(last) - static_cast<double>(first)) /
                  static_cast<double>(first),
              ok ? "flat" : "GROWS");
  return ok;
}

}  // namespace
}  // namespace streamsan::injection

int main(int argc, char** argv) {
  using namespace streamsan::injection;
  const bool with_engine = argc > 1 && std::strcmp(argv[1], "--engine") == 0;
  feed f(with_engine);
  std::printf("%s\n", with_engine ? "model + recorder + live engine"
                                  : "model + recorder (injection side only)");
  std::printf("%-8s %8s %10s %15s %19s %16s %12s\n", "churn", "done", "rss_kib",
              "stream_handles", "per_thread_streams", "unwinder_states", "records");
  std::uintptr_t next_handle = 0x100000;
  std::uint64_t done = 0;
  std::vector<std::uint64_t> stream_rss;
  for (const std::uint64_t target : {1000ull, 10000ull, 100000ull}) {
    for (; done < target; ++done) {
      f.stream_cycle(next_handle += 0x40);
      // The machine is shared: a component that grows stops the run early.
      if (done % 1000 == 0 && resident_kib() > memory_limit_kib) {
        f.print("streams", done, resident_kib());
        std::printf("stopped: resident memory above %llu MiB\n",
                    static_cast<unsigned long long>(memory_limit_kib / 1024));
        return 1;
      }
    }
    stream_rss.push_back(resident_kib());
    f.print("streams", done, stream_rss.back());
  }
  done = 0;
  std::vector<std::uint64_t> thread_rss;
  for (const std::uint64_t target : {1000ull, 10000ull}) {
    for (; done < target; ++done) f.thread_cycle();
    thread_rss.push_back(resident_kib());
    f.print("threads", done, thread_rss.back());
  }
  bool ok = flat("streams 1k -> 100k", stream_rss.front(), stream_rss.back()) &
            flat("threads 1k -> 10k", thread_rss.front(), thread_rss.back());
  // What the model and the unwinder keep, exactly: no stream is alive, and
  // only the main thread is (it used no per-thread default stream).
  const auto kept = f.model.footprint();
  if (kept.stream_handles > 1024 || kept.per_thread_streams != 0 ||
      live_unwinder_states() != 1) {
    std::printf("the model or the unwinder keeps state of streams or threads that ended\n");
    ok = false;
  }
  print_per_live_object();
  return ok ? 0 : 1;
}
