// The CUPTI subscriber: decodes runtime, driver, NVTX and resource
// callbacks into cuda_model calls.
//
// Note [Runtime calls are modelled at the runtime level]
// A CUDA runtime call runs driver calls of its own, and CUPTI reports those
// too. The runtime API is what the program wrote and what the documentation
// specifies (cudaStreamLegacy, the per-thread default stream, memcpy kinds),
// so the outermost runtime call is modelled and the driver calls nested in
// it are not. Driver calls made directly by the program (a program that
// uses only the driver API, NVRTC code) are modelled at the driver level.
// One exception: a kernel launch is modelled from the driver launch nested
// in the runtime launch, because only the driver callback names the kernel
// by a handle that its parameter layout can be asked for (Note [CUkernel or
// CUfunction]); if no driver launch shows up, the runtime callback records
// the launch by name without accesses and lists it as unmodelled.
//
// Note [The call that loads the library]
// The driver loads the library inside cuInit, which the CUDA runtime calls
// from inside the program's first runtime call. CUPTI never reports that
// call's entry (and need not report its exit). Nothing marks it as a runtime
// call in progress, so the driver calls it makes after cuInit (cuMemAlloc
// for a first cudaMalloc, cuLaunchKernel for a first launch) are modelled at
// the driver level, and an exit without an entry is ignored.
//
// Note [Frees and destroys on entry]
// Memory freed by one thread can be handed out again to another before the
// first thread's exit callback runs; the allocation map would then drop the
// new allocation. Frees and destroys are therefore modelled when the call
// enters, everything else when it returns successfully (handles, results
// and query outcomes are known only then).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "inject/model/cuda_model.h"

namespace streamsan::injection {

class cupti_subscriber {
 public:
  cupti_subscriber(cuda_model& model, unsigned stack_depth);
  cupti_subscriber(const cupti_subscriber&) = delete;
  cupti_subscriber& operator=(const cupti_subscriber&) = delete;

  // Subscribes and enables the runtime, driver, NVTX and resource domains.
  // Throws std::runtime_error with CUPTI's message on failure.
  void enable();
  // Stops modelling (at process exit: what the CUDA runtime does while it
  // tears down is not the program's doing). Callbacks become no-ops.
  void stop() noexcept { active_.store(false, std::memory_order_release); }
  // Resumes after stop() (halt_on_error when the diagnostic was suppressed).
  void resume() noexcept { active_.store(subscriber_ != nullptr, std::memory_order_release); }

  // CUDA API calls the program made (outermost calls only).
  std::uint64_t api_calls() const noexcept { return api_calls_.load(std::memory_order_relaxed); }
  // Callbacks received per CUPTI domain (for STREAMSAN_DEBUG).
  std::uint64_t callbacks_received(std::uint32_t domain) const noexcept {
    return domain < received_.size() ? received_[domain].load(std::memory_order_relaxed) : 0;
  }

  // The calling thread's stack, as the model wants it (outside callbacks:
  // annotations).
  call_site capture_call_site() const noexcept;

  // Dispatch entry for CUPTI (public for the C callback trampoline).
  void on_callback(std::uint32_t domain, std::uint32_t cbid, const void* data);

 private:
  struct api_info {
    bool per_thread = false;  // a _ptsz / _ptds variant
    bool unmodelled = false;  // listed at exit unless handled
    bool inert = false;       // callbacks switched off
    bool known = false;
  };

  void on_runtime(std::uint32_t cbid, const void* data);
  void on_driver(std::uint32_t cbid, const void* data);
  void on_nvtx(std::uint32_t cbid, const void* data);
  void on_resource(std::uint32_t cbid, const void* data);

  // Return true when the call was handled (modelled or deliberately ignored).
  bool runtime_entry(std::uint32_t cbid, const void* data);
  bool runtime_exit(std::uint32_t cbid, const void* data);
  bool driver_entry(std::uint32_t cbid, const void* data);
  bool driver_exit(std::uint32_t cbid, const void* data);
  void nested_driver_exit(std::uint32_t cbid, const void* data);
  void count_unmodelled(std::uint32_t domain, std::uint32_t cbid, const char* name);
  // The stack of the call being handled (uses the callback's path key).
  call_site here() const noexcept;
  call_site capture(std::uint64_t path_key) const noexcept;

  cuda_model& model_;
  unsigned stack_depth_;
  std::atomic<bool> active_{false};
  std::atomic<std::uint64_t> api_calls_{0};
  std::array<std::atomic<std::uint64_t>, 8> received_{};
  std::vector<api_info> runtime_info_;
  std::vector<api_info> driver_info_;
  void* subscriber_ = nullptr;
};

}  // namespace streamsan::injection
