// The source-neutral entry point of capture: a source (inject/cupti, or the
// Compute Sanitizer API) turns each runtime or driver callback into an
// api_call and calls dispatch() (Note [One table for every source]).
//
// Note [Runtime calls are modelled at the runtime level]
// A CUDA runtime call runs driver calls of its own, and the sources report
// those too. The runtime API is what the program wrote and what the
// documentation specifies (cudaStreamLegacy, the per-thread default stream,
// memcpy kinds), so the outermost runtime call is modelled and the driver
// calls nested in it are not. Driver calls made directly by the program (a
// program that uses only the driver API, NVRTC code) are modelled at the
// driver level. One exception: a kernel launch is modelled from the driver
// launch nested in the runtime launch, because only the driver callback
// names the kernel by a handle that its parameter layout can be asked for
// (Note [CUkernel or CUfunction]); if no driver launch shows up, the runtime
// callback records the launch by name without accesses and lists it as
// unmodelled.
//
// Note [Launches without their runtime callback]
// A callback costs inside the driver even when the subscriber does nothing:
// on an H200, runtime + driver launch callbacks cost a launch-bound loop
// 1.12x native, the driver's alone 1.00x (bench/precise/bare_cupti.cpp,
// BARE_CUPTI_ONLY). For `kernel<<<...>>>` (__cudaLaunchKernel in CUDA 13)
// the runtime callback adds nothing the nested driver launch does not say:
// the driver callback names the kernel, its arguments, its stream and its
// outcome. So the sources switch that runtime callback off (switched_off),
// and the driver launch, no longer nested in a runtime call we see, is
// modelled as an outermost driver call. The per-thread variant
// (__cudaLaunchKernel_ptsz) keeps its callback: its driver launch may be the
// plain cuLaunchKernel on stream 0, and only the runtime call says that
// stream 0 is then the per-thread default stream. The explicit
// cudaLaunchKernel, cudaLaunchCooperativeKernel and cudaLaunchKernelExC keep
// theirs too: the cooperative flag comes from the runtime call's name, and
// their fallback lists a launch whose driver call never showed.
//
// Note [Runtime launch callbacks on request]
// With the statically linked CUDA 13 runtime, `kernel<<<...>>>` reaches the
// callbacks as cudaLaunchKernel, not __cudaLaunchKernel (in
// bench/precise/launch_loop a 16-byte thunk that jumps to cudaLaunchKernel,
// as __cudaLaunchKernel_ptsz does to cudaLaunchKernel_ptsz): under
// `streamsan run` on an H200
// (2026-11-28) launch_loop took 20,000 cudaLaunchKernel and 20,000
// cuLaunchKernel callbacks, the MLP loop 39,392 and 48,482, and 30,300 of
// each for cudaLaunchKernelExC and cuLaunchKernelEx. So the switch above
// saves nothing there, and every launch pays the runtime callback that
// CUPTI's pricing put at about 0.5 us. The plain cudaLaunchKernel and
// cudaLaunchKernelExC (not _ptsz, not cooperative by name) add nothing to
// their driver launch but the listing of a launch whose driver call never
// showed, so the sources switch them off too, unless
// STREAMSAN_RUNTIME_LAUNCH_CALLBACKS=on (set_runtime_launch_callbacks(true)).
// Priced on an H200 (2026-11-30, launch_loop): between processes two calls
// of 15 interleaved rounds put them at 0.888 and 0.961 paired (an earlier
// run could not tell them apart); inside one process (Note [Runtime launch
// callbacks toggled for a benchmark]) they cost 3.5% of the loop under
// streamsan run (1.025-1.046 over five processes). The examples, the
// acceptance programs and the torch suite gave the same verdicts without
// them (docs/injection.md, Overhead).
//
// Note [The call that loads the library]
// The driver loads the library inside cuInit, which the CUDA runtime calls
// from inside the program's first runtime call. The source never reports
// that call's entry (and need not report its exit). Nothing marks it as a
// runtime call in progress, so the driver calls it makes after cuInit
// (cuMemAlloc for a first cudaMalloc, cuLaunchKernel for a first launch) are
// modelled at the driver level, and an exit without an entry is ignored.
//
// Note [Frees and destroys on entry]
// Memory freed by one thread can be handed out again to another before the
// first thread's exit callback runs; the allocation map would then drop the
// new allocation. Frees and destroys are therefore modelled when the call
// enters, everything else when it returns successfully (handles, results
// and query outcomes are known only then).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inject/capture/api_call.h"
#include "inject/capture/api_table.h"
#include "inject/capture/call_sites.h"
#include "inject/model/cuda_model.h"

namespace streamsan::injection {

// Per host thread: where it is in the CUDA call that is running
// (dispatcher.cpp).
struct dispatch_thread_state;

class api_dispatcher {
 public:
  api_dispatcher(cuda_model& model, call_site_source& call_sites,
                 const api_tables& tables = api_tables::standard()) noexcept;
  api_dispatcher(const api_dispatcher&) = delete;
  api_dispatcher& operator=(const api_dispatcher&) = delete;

  // Models one runtime or driver callback. Call it on the thread that made
  // the CUDA call, for the entry and the exit of every call the source
  // reports, with the source's reentrancy guard held: the model asks the
  // driver questions, whose callbacks are not the program's calls. Nothing
  // escapes (a failure to model one call is not worth ending the program).
  void dispatch(const api_call& call) noexcept;

  // Callbacks are modelled between start() (the source is subscribed) and
  // stop() (process exit: what the CUDA runtime does while it tears down is
  // not the program's doing). resume() undoes stop() once started. A source
  // hands over every runtime and driver callback even while stopped: the
  // nesting of calls is kept (Note [Nesting is tracked while stopped]).
  void start() noexcept { started_.store(true, std::memory_order_release); resume(); }
  void stop() noexcept { active_.store(false, std::memory_order_release); }
  void resume() noexcept {
    active_.store(started_.load(std::memory_order_acquire), std::memory_order_release);
  }
  bool active() const noexcept { return active_.load(std::memory_order_acquire); }

  // CUDA API calls the program made (outermost calls only), on every
  // thread (Note [Calls counted per thread]). Takes no lock: a report made
  // at a signal reads it.
  std::uint64_t api_calls() const noexcept;

  // STREAMSAN_DEBUG: counts the entry callbacks of every call id, nested
  // ones included (each costs a callback, modelled or not). Call before
  // start(); off, dispatch() pays one branch.
  void count_callbacks_per_call();
  // The `n` call ids whose entry callbacks came most often, with their
  // counts, most frequent first ("runtime cudaGetDevice", 1200).
  std::vector<std::pair<std::string, std::uint64_t>> most_frequent_calls(std::size_t n) const;

  // A call whose callbacks a source may switch off: nothing to model.
  bool is_inert(api_domain domain, std::uint32_t cbid) const noexcept;
  // A call whose callbacks a source switches off: inert ones, and those the
  // driver call they make models (Note [Launches without their runtime
  // callback]).
  bool switched_off(api_domain domain, std::uint32_t cbid) const noexcept;
  // A call whose table entry says it launches a kernel (the runtime's).
  bool launches_kernel(api_domain domain, std::uint32_t cbid) const noexcept;
  // Note [Runtime launch callbacks on request]; call before a source
  // subscribes.
  void set_runtime_launch_callbacks(bool on) noexcept { runtime_launch_callbacks_ = on; }

 private:
  // Each is handed the calling thread's state (Note [One look at the
  // thread's state] in thread_state_ref.h). Those marked inline are
  // defined in dispatcher.cpp only (Note [A callback's layers inline]).
  void on_runtime(const api_call& call, dispatch_thread_state& t);
  [[gnu::always_inline]] inline void on_driver(const api_call& call, dispatch_thread_state& t);
  // Runs `fn` for `call` (nested: a driver launch inside a runtime launch).
  void run(api_handler_fn fn, const api_entry& entry, const api_call& call, bool nested,
           dispatch_thread_state& t);
  // The exit of an outermost call: its outcome, then the handler's `around`.
  [[gnu::always_inline]] inline void model_exit(const api_entry& entry, const api_call& call,
                                                dispatch_thread_state& t);
  [[gnu::always_inline]] inline void model_outcome(const api_entry& entry, const api_call& call,
                                                   dispatch_thread_state& t);
  void count_unmodelled(const api_call& call, const dispatch_thread_state& t);
  // Note [Calls counted per thread]
  [[gnu::always_inline]] inline void count_api_call(dispatch_thread_state& t) noexcept;
  // Note [Path cache]: the key of this callback's path.
  [[gnu::always_inline]] inline static std::uint64_t key_of(
      const api_call& call, const dispatch_thread_state& t) noexcept;

  cuda_model& model_;
  call_site_source& call_sites_;
  const api_tables& tables_;
  bool runtime_launch_callbacks_ = false;
  std::atomic<bool> started_{false};
  std::atomic<bool> active_{false};
  // Whose calls a thread's count holds (Note [Calls counted per thread]).
  const std::uint64_t generation_;
  // Per domain, indexed by callback id; null unless count_callbacks_per_call().
  std::unique_ptr<std::atomic<std::uint64_t>[]> per_call_[2];
};

}  // namespace streamsan::injection
