#include "inject/sanitizer_api/sanitizer_source.h"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "inject/capture/launch_decoding.h"
#include "inject/model/kernel_signature.h"
#include "inject/sanitizer_api/launch_gate.h"
#include "inject/sanitizer_api/launch_tracker.h"
#include "inject/sanitizer_api/sanitizer_library.h"
#include "sanitizer/log/elapsed.h"
#include "sanitizer/log/printable_text.h"
#include "sanitizer/log/thread_state_ref.h"

namespace streamsan::injection {
namespace sa = streamsan::sanitizer_api;

namespace {

// Adds the time from its making to its end to `total` (ns).
class time_added_to {
 public:
  explicit time_added_to(std::atomic<std::uint64_t>& total) noexcept
      : total_(total), begin_(std::chrono::steady_clock::now()) {}
  ~time_added_to() { total_.fetch_add(nanoseconds_since(begin_), std::memory_order_relaxed); }
  time_added_to(const time_added_to&) = delete;
  time_added_to& operator=(const time_added_to&) = delete;

 private:
  std::atomic<std::uint64_t>& total_;
  std::chrono::steady_clock::time_point begin_;
};

// A call of the program's in progress on this thread, which the exit of
// the same API (domain and callback id) ends: a call nested in it (the
// driver's launch inside the runtime's) exits first and ends nothing.
struct call_in_progress {
  bool active = false;
  api_domain domain = api_domain::runtime;
  std::uint32_t cbid = 0;

  void begin(api_domain d, std::uint32_t c) noexcept {
    active = true;
    domain = d;
    cbid = c;
  }
  bool is(api_domain d, std::uint32_t c) const noexcept {
    return active && domain == d && cbid == c;
  }
};

// Per host thread: inside one of our own callbacks (our driver calls are
// not the program's), and what the entry of a launch call decided.
struct thread_state {
  bool busy = false;
  call_in_progress launch_call;  // the launch call in progress
  bool measure_launch = false;
  std::uint32_t slot_estimate = 0;
  // The launch's key in measured_once, as the entry saw it.
  std::pair<CUfunction, CUstream> key{};
  // The launch or graph launch call holds `launching` shared (Note [A
  // module changes only while none of its kernels runs]); its exit lets go.
  call_in_progress holding;
  bool ptds_launch = false;  // the launch call in progress is on that stream
  // Note [Launches paused for a benchmark]: the launch call in progress
  // passes through; its exit lets it go.
  call_in_progress paused_launch;
  // What the held launch call adds to the lists of work that may run, at its
  // exit (Note [Stamped at the launch call's exit]).
  enum class pending_kind : std::uint8_t { none, module_stream, own_default_stream, graph_stream };
  pending_kind pending = pending_kind::none;
  CUmodule pending_module = nullptr;
  CUstream pending_stream = nullptr;
  bool pending_wanted = false;  // the launch wanted a measurement
  std::uint64_t id = 0;      // for ptds_pending; assigned at first need
  std::uint64_t synchronize_entered = 0;  // launch_seq at a synchronize's entry
  // The graph launch call in progress (Note [Which graph nodes are
  // measured]): its exit ends it; whether its nodes may be measured, and
  // whether the tracker saw any of them.
  call_in_progress graph_launch;
  bool measure_graph = false;
  bool graph_nodes_seen = false;
  // Note [Settled launches]: kernels (by launch handle) and streams whose
  // launches this thread found needing no measurement, valid while
  // `settled_generation` is the source's decision generation.
  struct settled_launch {
    std::uintptr_t handle = 0;
    CUstream stream = nullptr;
    CUfunction function = nullptr;
    CUmodule module = nullptr;
    bool measured_here = false;
  };
  std::array<settled_launch, 8> settled{};
  std::uint64_t settled_generation = 0;
  std::uint32_t settled_next = 0;
  // Note [Stamps written through remembered slots]: the entries of
  // launched_on and wanted_at_last_launch this thread's launches wrote
  // last, valid while `slots_generation` is the source's lists_generation.
  struct pending_slots {
    CUmodule module = nullptr;
    CUstream stream = nullptr;
    std::uint64_t* stamp = nullptr;
    bool* wanted = nullptr;
  };
  std::array<pending_slots, 4> slots{};
  std::uint64_t slots_generation = 0;
  std::uint32_t slots_next = 0;
};

// Decision generations are unique across sources (tests make several in
// one thread), so that a thread's settled launches never outlive theirs.
std::atomic<std::uint64_t> last_decision_generation{0};
std::uint64_t new_decision_generation() noexcept {
  return last_decision_generation.fetch_add(1, std::memory_order_relaxed) + 1;
}

// The _ptsz/_ptds variants: stream 0 is then the per-thread default stream.
bool is_per_thread_variant(const char* name) noexcept {
  if (name == nullptr) return false;
  const std::string_view n(name);
  return n.ends_with("_ptsz") || n.ends_with("_ptds");
}
// Note [Thread state without a TLS wrapper]
// Every callback reads and writes this many times. A thread_local of a type
// that needs a constructor or destructor is reached through a wrapper that
// checks its initialization and, in a library the driver dlopens, calls
// __tls_get_addr: on the H100's launch loop that was about 0.2 us a launch
// (5% of the process). So the state is trivially constructed and destroyed
// (constinit proves it), and a callback takes one reference to it and hands
// it down (Note [One look at the thread's state] in thread_state_ref.h).
constinit thread_local thread_state tls_thread;

class busy_guard {
 public:
  explicit busy_guard(thread_state& me) noexcept : me_(me), was_(me.busy) { me.busy = true; }
  ~busy_guard() { me_.busy = was_; }
  busy_guard(const busy_guard&) = delete;
  busy_guard& operator=(const busy_guard&) = delete;

 private:
  thread_state& me_;
  bool was_;
};

// What the source knows of one kernel handle (a CUkernel or CUfunction).
struct kernel_entry {
  CUfunction function = nullptr;
  CUmodule module = nullptr;
  std::string name;  // the model's short name (kernel_signature)
};

// What the entry of a launch call decides from its kernel.
struct launch_facts {
  CUfunction function = nullptr;
  CUmodule module = nullptr;
  bool want = false;  // measure this launch
  // The kernel was measured on this stream before (Note [First launches
  // are measured once work can overlap]).
  bool measured_here = false;
};

}  // namespace

struct sanitizer_source::impl {
  impl(const sa::sanitizer_library& l, const sa::tracker_driver& d, api_dispatcher& disp,
       cuda_model& m, measurement_policy p, graph_node_measurement g)
      : lib(l), driver(d), dispatcher(disp), model(m), policy(p),
        graph_nodes(g == graph_node_measurement::on), tracker(l, d) {
    tracker.set_failure_callback(
        [this](CUfunction f, const char* why) { footprint_not_decoded(f, why); });
  }

  const sa::sanitizer_library& lib;
  const sa::tracker_driver driver;
  api_dispatcher& dispatcher;
  cuda_model& model;
  const measurement_policy policy;
  const bool graph_nodes;  // Note [Graph node measurement is on]
  sa::launch_tracker tracker;
  Sanitizer_SubscriberHandle subscriber = nullptr;
  // Note [A callback counter only when asked]
  // Every API callback (four a launch: runtime and driver, entry and exit)
  // counted into one atomic: a locked add each, which drains the store
  // buffer. On an H200's launch loop the instruction after it took 0.7% of
  // the program thread's wall-clock samples, the hottest single address of
  // ours but the unwinder's (bench/profile/critical_share.py). Only
  // STREAMSAN_DEBUG prints the count, so only then is it counted.
  bool counting_api_callbacks = false;
  std::atomic<std::uint64_t> api_callbacks{0};
  std::atomic<std::uint64_t> nested_api_callbacks{0};
  std::atomic<std::uint64_t> launches{0};
  // Launch calls while no work could overlap (Note [First launches are
  // measured once work can overlap]); counted only when asked, as
  // api_callbacks is.
  std::atomic<std::uint64_t> launches_before_overlap{0};

  mutable std::mutex mutex;
  std::unordered_map<std::uintptr_t, kernel_entry> kernels;  // by launch handle
  // (function, stream) pairs measured at least once (Note [Which launches
  // are measured]).
  std::set<std::pair<CUfunction, CUstream>> measured_once;
  std::map<std::string, unsigned, std::less<>> wanted;  // name -> launches to measure
  std::atomic<bool> any_wanted{false};
  // Note [Settled launches]: a new value whenever a settled launch may no
  // longer be (kernels and measured_once forgotten, or a pair measured for
  // the first time, which a settled launch may hold was not), under
  // `mutex`.
  std::atomic<std::uint64_t> decision_generation{new_decision_generation()};
  // What a settled launch was told no under: the decision generation, and
  // whether work could overlap then (a no told before may be a yes after:
  // Note [First launches are measured once work can overlap]).
  std::uint64_t settling_generation() const noexcept {
    return decision_generation.load(std::memory_order_acquire) * 2 +
           (model.work_may_overlap() ? 1 : 0);
  }
  void forget_decisions_locked() {
    kernels.clear();
    measured_once.clear();
    decision_generation.store(new_decision_generation(), std::memory_order_release);
  }
  // Modules the Sanitizer API would not patch: why, and the kernels of
  // theirs that were launched (they keep inferred footprints).
  struct failure {
    std::string why;
    std::set<std::string> kernels;
  };
  std::map<CUmodule, failure> failed_modules;
  // Note [A decoding job that throws]: by kernel name, the first reason a
  // footprint of it could not be decoded, and how many launches.
  struct decode_failure {
    std::string why;
    std::uint64_t launches = 0;
  };
  std::map<std::string, decode_failure, std::less<>> decode_failures;
  void footprint_not_decoded(CUfunction f, const char* why);
  std::string kernel_name_locked(CUfunction f) const;
  // --precise: modules loaded but not patched yet (while a stream captured,
  // or when patching at load was busy: Note [A module-loaded callback waits
  // a bounded time]), with their contexts (Note [Patched before a graph is
  // instantiated]).
  std::map<CUmodule, CUcontext> loaded_unpatched;
  std::atomic<std::uint64_t> patches_put_off_at_load{0};

  // Note [A module changes only while none of its kernels runs], Note [The
  // launch gate].
  sa::launch_gate launching;
  // Under `mutex`: per module, the streams its kernels were launched on
  // since they were last seen idle; the streams of graph launches (their
  // nodes may run any module's kernels); whether work may run that no query
  // can see (a stream destroyed busy), until a context synchronize.
  // Each entry is stamped with launch_seq when last added, so that a
  // synchronize forgets only what was launched before it began.
  std::unordered_map<CUmodule, std::map<CUstream, std::uint64_t>> launched_on;
  // Per module: whether its last launch wanted a measurement (Note
  // [Unpatched at a synchronize]).
  std::unordered_map<CUmodule, bool> wanted_at_last_launch;
  // Note [Stamps written through remembered slots]: a new value whenever an
  // entry of either list goes (under `mutex`).
  std::uint64_t lists_generation = new_decision_generation();
  void lists_changed_locked() { lists_generation = new_decision_generation(); }
  void stamp_module_stream_locked(thread_state& me, std::uint64_t stamp);
  // Note [Waiting for a module's streams to drain]: the modules whose
  // unpatch has waited since they were last patched.
  std::unordered_set<CUmodule> drained_since_patch;
  std::map<CUstream, std::uint64_t> graph_streams;
  std::uint64_t unseen_work = 0;  // stamp of the last, 0 for none
  // Threads (by thread_state::id) with per-thread default stream work not
  // seen idle: only the thread itself can ask its stream.
  std::map<std::uint64_t, std::uint64_t> ptds_pending;
  std::atomic<bool> any_ptds_pending{false};
  std::atomic<std::uint64_t> launch_seq{0};
  std::atomic<bool> launches_paused{false};  // Note [Launches paused for a benchmark]
  bool starts_paused_launch(thread_state& me, const api_call& call);
  void end_paused_launch(thread_state& me, const api_call& call);
  std::atomic<std::uint64_t> next_thread_id{0};
  std::atomic<std::uint64_t> transitions_deferred{0};
  std::atomic<std::uint64_t> unpatched_at_synchronize{0};
  // In patch() and unpatch(): the Sanitizer API's (un)patching and the
  // launch callbacks switched after it; a launch call that patches waits
  // for it.
  std::atomic<std::uint64_t> change_ns{0};
  // Note [Module changes back off]: no patch or unpatch of a launch's
  // module is tried before launch_seq reaches change_after; change_deferrals
  // counts the failed tries since the last success or synchronize.
  std::atomic<std::uint64_t> change_after{0};
  std::atomic<std::uint32_t> change_deferrals{0};
  // Note [Waiting for a module's streams to drain]; zero: never.
  std::chrono::milliseconds unpatch_wait{0};
  bool first_drain(CUmodule module);
  // Note [A module-loaded callback waits a bounded time] (launch_tracker.cpp):
  // long enough for another thread's patch of a large module, short enough
  // that a program stalls for it only now and then.
  static constexpr std::chrono::milliseconds patch_at_load_wait{50};
  bool drained_within(CUmodule module, std::chrono::milliseconds limit);
  // drained_within(module, unpatch_wait), counted for STREAMSAN_DEBUG.
  bool waited_for_drain(CUmodule module);
  std::atomic<std::uint64_t> drain_waits{0};
  std::atomic<std::uint64_t> drained{0};
  std::atomic<std::uint64_t> drain_wait_ns{0};
  // Changes put off because another thread held `launching`.
  std::atomic<std::uint64_t> changes_locked_out{0};
  bool change_due() const noexcept {
    return launch_seq.load(std::memory_order_acquire) >= change_after.load(std::memory_order_acquire);
  }
  void try_change(CUcontext ctx, CUmodule module, bool patched);
  void retry_changes_now() noexcept {
    change_deferrals.store(0, std::memory_order_release);
    change_after.store(0, std::memory_order_release);
  }
  // The launch path hands the thread's state down (Note [One look at the
  // thread's state] in thread_state_ref.h).
  void hold_launching(thread_state& me, api_domain domain, std::uint32_t cbid);
  void release_launching(thread_state& me, api_domain domain, std::uint32_t cbid);
  bool stream_idle(CUstream stream) const;
  void verify_own_default_stream();
  bool module_idle(CUmodule module);
  // `drain`: an unpatch may wait for the module's streams (Note [Waiting
  // for a module's streams to drain]).
  void change_module(CUcontext ctx, CUmodule module, bool patched, bool drain);
  void on_graph_launch_entry(thread_state& me, const call_facts& f, api_domain domain,
                             std::uint32_t cbid);
  void on_graph_instantiate_entry();
  // At the graph launch call's exit: the nodes it measured, for the model.
  std::vector<cuda_model::measured_graph_node> graph_launch_exit();
  void on_stream_destroy_entry(CUstream stream);
  void on_context_synchronized(std::uint64_t entered);
  void unpatch_unwanted_modules();

  static void SANITIZERAPI trampoline(void* self, Sanitizer_CallbackDomain domain,
                                      Sanitizer_CallbackId cbid, const void* data);
  void on_callback(Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* data);
  void on_api(thread_state& me, api_domain domain, std::uint32_t cbid,
              const Sanitizer_CallbackData& d);
  void on_api_exit(thread_state& me, const api_call& call);
  void on_launch_entry(thread_state& me, const launch_request& request, const void* stream);
  void on_launch(Sanitizer_CallbackId cbid, const Sanitizer_LaunchData& d);
  void on_graph_node(const Sanitizer_GraphNodeLaunchData& d);
  bool capturing(CUstream stream) const;
  void on_resource(Sanitizer_CallbackId cbid, const void* data);
  kernel_entry look_up_kernel(std::uintptr_t handle) const;
  launch_facts decide(thread_state& me, std::uintptr_t handle, CUstream stream);
  launch_facts decide_settling(std::uintptr_t handle, CUstream stream);
  launch_facts decide_locked(const kernel_entry& k, CUstream stream);
  // measured_here: k was measured on the launch's stream before.
  bool wants_locked(const kernel_entry& k, bool measured_here) const;
  bool wanted_by_name_locked(std::string_view name) const;
  void add_pending_work(thread_state& me);
  void patch(CUcontext ctx, CUmodule module);
  void patch_at_load(CUcontext ctx, CUmodule module);
  // Named with its kernels at exit; their launches keep inferred footprints.
  void patch_refused(CUmodule module, const std::string& why);
  void unpatch(CUmodule module);
  // Note [Launch callbacks only while patched]
  void update_launch_callbacks();
  // Subscribes and enables the callbacks the source wants at start-up.
  void subscribe();
  std::mutex callbacks_mutex;
  bool launch_callbacks_on = false;  // under callbacks_mutex
  void poll(bool wait_all);
  // What a footprint read back (or abandoned) is handed to.
  sa::launch_tracker::footprint_callback to_model();
};

// ---- subscription ----

void SANITIZERAPI sanitizer_source::impl::trampoline(void* self, Sanitizer_CallbackDomain domain,
                                                     Sanitizer_CallbackId cbid,
                                                     const void* data) {
  try {
    static_cast<impl*>(self)->on_callback(domain, cbid, data);
  } catch (...) {
    // Nothing may escape into the driver (Note [One table for every source]).
  }
}

std::unique_ptr<sanitizer_source> sanitizer_source::create(api_dispatcher& dispatcher,
                                                           cuda_model& model,
                                                           measurement_policy policy,
                                                           std::string& why,
                                                           graph_node_measurement graph_nodes) {
  const auto loaded = sa::load_sanitizer_library();
  if (loaded.library == nullptr) {
    why = loaded.error;
    return nullptr;
  }
  const auto driver = sa::resolve_tracker_driver();
  if (!driver) {
    why = "the CUDA driver in this process lacks an entry point the Sanitizer API source needs";
    return nullptr;
  }
  return std::unique_ptr<sanitizer_source>(new sanitizer_source(
      std::make_unique<impl>(*loaded.library, *driver, dispatcher, model, policy, graph_nodes)));
}

sanitizer_source::sanitizer_source(std::unique_ptr<impl> i) : impl_(std::move(i)) {}
sanitizer_source::~sanitizer_source() = default;

void sanitizer_source::enable() {
  impl_->subscribe();
  impl_->dispatcher.start();
}

void sanitizer_source::impl::subscribe() {
  auto& i = *this;
  const auto check = [&](SanitizerResult r, const char* what) {
    if (r != SANITIZER_SUCCESS) throw std::runtime_error(std::string(what) + ": " + i.lib.describe(r));
  };
  check(i.lib.subscribe(&i.subscriber, &impl::trampoline, &i), "sanitizerSubscribe");
  check(i.lib.enable_domain(1, i.subscriber, SANITIZER_CB_DOMAIN_DRIVER_API), "enabling driver callbacks");
  check(i.lib.enable_domain(1, i.subscriber, SANITIZER_CB_DOMAIN_RUNTIME_API), "enabling runtime callbacks");
  // Launch and graph-node callbacks follow the patched modules (Note
  // [Launch callbacks only while patched]).
  for (const auto cbid : {SANITIZER_CBID_RESOURCE_MODULE_LOADED,
                          SANITIZER_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
                          SANITIZER_CBID_RESOURCE_CONTEXT_DESTROY_STARTING}) {
    check(i.lib.enable_callback(1, i.subscriber, SANITIZER_CB_DOMAIN_RESOURCE, cbid),
          "enabling resource callbacks");
  }
  // Note [Unmodelled calls are listed, inert calls are not]: no callbacks
  // at all for calls that need nothing, nor for those their driver call
  // models (Note [Launches without their runtime callback]).
  for (std::uint32_t cbid = 1; cbid < SANITIZER_CBID_RUNTIME_API_SIZE; ++cbid) {
    if (i.dispatcher.switched_off(api_domain::runtime, cbid)) {
      i.lib.enable_callback(0, i.subscriber, SANITIZER_CB_DOMAIN_RUNTIME_API, cbid);
    }
  }
  for (std::uint32_t cbid = 1; cbid < SANITIZER_CBID_DRIVER_API_SIZE; ++cbid) {
    // Note [No module change while a module loads]: module calls stay on.
    const api_call module_call{api_domain::driver, cbid};
    if (decode_call_role(module_call).role == call_role::module_call) continue;
    if (i.dispatcher.switched_off(api_domain::driver, cbid)) {
      i.lib.enable_callback(0, i.subscriber, SANITIZER_CB_DOMAIN_DRIVER_API, cbid);
    }
  }
}

// ---- callbacks ----

void sanitizer_source::impl::on_callback(Sanitizer_CallbackDomain domain,
                                         Sanitizer_CallbackId cbid, const void* data) {
  thread_state& me = thread_state_ref(tls_thread);
  switch (domain) {
    case SANITIZER_CB_DOMAIN_DRIVER_API:
    case SANITIZER_CB_DOMAIN_RUNTIME_API: {
      if (me.busy) {
        if (counting_api_callbacks) nested_api_callbacks.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      busy_guard busy(me);
      if (counting_api_callbacks) api_callbacks.fetch_add(1, std::memory_order_relaxed);
      on_api(me, domain == SANITIZER_CB_DOMAIN_DRIVER_API ? api_domain::driver : api_domain::runtime,
             cbid, *static_cast<const Sanitizer_CallbackData*>(data));
      return;
    }
    case SANITIZER_CB_DOMAIN_LAUNCH: {
      busy_guard busy(me);
      on_launch(cbid, *static_cast<const Sanitizer_LaunchData*>(data));
      return;
    }
    case SANITIZER_CB_DOMAIN_GRAPHS: {
      busy_guard busy(me);
      if (cbid == SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN) {
        on_graph_node(*static_cast<const Sanitizer_GraphNodeLaunchData*>(data));
      }
      return;
    }
    case SANITIZER_CB_DOMAIN_RESOURCE: {
      // Also while busy: a module our own query made the driver load must
      // still be patched and its kernels' handles retired on unload.
      busy_guard busy(me);
      on_resource(cbid, data);
      return;
    }
    default:
      return;
  }
}

void sanitizer_source::impl::on_api(thread_state& me, api_domain domain, std::uint32_t cbid,
                                    const Sanitizer_CallbackData& d) {
  if (!dispatcher.active()) return;
  const api_call call{domain, cbid,
                      d.callbackSite == SANITIZER_API_ENTER ? api_site::entry : api_site::exit,
                      d.functionParams, d.functionReturnValue, d.functionName};
  if (me.paused_launch.active) [[unlikely]] {
    end_paused_launch(me, call);
    return;
  }
  if (call.site == api_site::entry) {
    // Note [Nothing of ours while a stream captures]
    if (tracker.in_flight() > 0 && !model.any_capture_active()) poll(false);
    if (launches_paused.load(std::memory_order_relaxed) && starts_paused_launch(me, call))
        [[unlikely]] {
      return;
    }
    // A driver launch nested in a runtime launch is the same launch.
    if (const auto request = me.launch_call.active ? std::nullopt : decode_launch(call)) {
      me.launch_call.begin(domain, cbid);
      if (request->stream == nullptr && is_per_thread_variant(d.functionName)) {
        me.ptds_launch = true;
      }
      on_launch_entry(me, *request, request->stream);
    } else if (const call_facts f = decode_call_role(call); f.role != call_role::other) {
      switch (f.role) {
        case call_role::graph_launch: on_graph_launch_entry(me, f, domain, cbid); break;
        case call_role::graph_instantiate: on_graph_instantiate_entry(); break;
        case call_role::graph_exec_destroy:
          tracker.forget_graph_exec(reinterpret_cast<std::uintptr_t>(f.graph_exec));
          break;
        case call_role::stream_destroy:
          // Held to the call's exit: a change never asks a stream being
          // destroyed (cuStreamQuery on a freed handle crashed in the driver).
          hold_launching(me, domain, cbid);
          on_stream_destroy_entry(static_cast<CUstream>(const_cast<void*>(f.stream)));
          break;
        case call_role::context_synchronize:
          me.synchronize_entered = launch_seq.load(std::memory_order_acquire);
          break;
        case call_role::host_wait: retry_changes_now(); break;
        // Note [No module change while a module loads]
        case call_role::module_call: hold_launching(me, domain, cbid); break;
        case call_role::other: break;
      }
    }
    dispatcher.dispatch(call);
    return;
  }
  on_api_exit(me, call);
}

// Note [Launches paused for a benchmark]
// A launch-bound program's cost under streamsan moves by 20-30% between
// processes on the GPU machine, more than a change of ours, while inside
// one process the same work repeats within a few percent. So a benchmark
// (bench/precise/launch_loop.cu, LAUNCH_LOOP_ALTERNATE) may switch the
// modelling of kernel launches off and on between blocks of launches,
// through streamsan_inject_bench_pause_launches, which refuses unless
// STREAMSAN_BENCH_PAUSE=1: a paused launch is neither recorded nor checked
// (a false negative by design), and so is a runtime launch call that
// wraps it (cudaLaunchKernel, whose callback stays on: Note [Runtime launch
// callbacks on request]), with everything nested in it. Its callbacks still
// come, so the paused blocks cost the subscriber, this check and the
// callback's entry: a floor measured in the same process. Everything else
// (events, waits, copies) is modelled throughout, so the log stays in
// order for the launches that are. A paused launch does not hold `launching` either: it is no launch of
// ours to keep a module change away from, and the benchmark makes no
// module changes while paused (its modules are settled).
// A launch call, or a runtime launch the source does not decode
// (cudaLaunchKernel by its host stub), at its entry: true when paused.
bool sanitizer_source::impl::starts_paused_launch(thread_state& me, const api_call& call) {
  if (me.launch_call.active) return false;
  if (!decode_launch(call) && !dispatcher.launches_kernel(call.domain, call.cbid)) return false;
  me.paused_launch.begin(call.domain, call.cbid);
  return true;
}

// The calls nested in a paused launch (a runtime launch's driver launch)
// pass too.
void sanitizer_source::impl::end_paused_launch(thread_state& me, const api_call& call) {
  if (call.site == api_site::exit && me.paused_launch.is(call.domain, call.cbid)) {
    me.paused_launch.active = false;
  }
}

void sanitizer_source::pause_launches(bool paused) noexcept {
  impl_->launches_paused.store(paused, std::memory_order_relaxed);
}

// Note [Runtime launch callbacks toggled for a benchmark]
// What the plain runtime launch callbacks cost (Note [Runtime launch
// callbacks on request]) is too little to see between processes on the GPU
// machine (two calls: 0.888 and 0.961 paired by round), so a benchmark may
// switch them on and off between blocks of launches in one process
// (launch_loop's LAUNCH_LOOP_ALTERNATE_WHAT=runtime_callbacks). Between two
// calls of one thread nothing is nested, so the dispatcher, which models a
// driver launch as outermost when no runtime call encloses it, sees either
// way whole.
void sanitizer_source::set_runtime_launch_callbacks(bool on) {
  auto& i = *impl_;
  if (i.subscriber == nullptr) throw std::runtime_error("the subscription is dropped");
  i.dispatcher.set_runtime_launch_callbacks(on);
  for (std::uint32_t cbid = 1; cbid < SANITIZER_CBID_RUNTIME_API_SIZE; ++cbid) {
    if (!i.dispatcher.launches_kernel(api_domain::runtime, cbid)) continue;
    const bool wanted = !i.dispatcher.switched_off(api_domain::runtime, cbid);
    i.lib.enable_callback(wanted ? 1 : 0, i.subscriber, SANITIZER_CB_DOMAIN_RUNTIME_API, cbid);
  }
}

// Note [Launches unseen for a benchmark]
// A paused launch (Note [Launches paused for a benchmark]) still takes its
// callbacks, so paused blocks price our work above the subscriber, not
// streamsan against the program alone; and between processes the GPU
// machine's runs spread more than the targets (docs/injection.md,
// "Overhead"). So a benchmark may also switch the driver's kernel launch
// callbacks off between blocks of launches: its launches then reach the
// driver as they do without streamsan, unseen (a false negative by design,
// as paused), while every other call keeps its callbacks and is modelled,
// so the log stays in order. A block with them on against one with them off,
// in one process, is streamsan's price for the launches against none. The
// switch is made between two calls of the benchmark's one launching thread,
// so no launch is in flight across it.
void sanitizer_source::set_launch_callbacks(bool on) {
  auto& i = *impl_;
  if (i.subscriber == nullptr) throw std::runtime_error("the subscription is dropped");
  for (const std::uint32_t cbid : {SANITIZER_CBID_DRIVER_API_cuLaunchKernel,
                                   SANITIZER_CBID_DRIVER_API_cuLaunchKernel_ptsz,
                                   SANITIZER_CBID_DRIVER_API_cuLaunchKernelEx,
                                   SANITIZER_CBID_DRIVER_API_cuLaunchKernelEx_ptsz,
                                   SANITIZER_CBID_DRIVER_API_cuLaunchCooperativeKernel,
                                   SANITIZER_CBID_DRIVER_API_cuLaunchCooperativeKernel_ptsz}) {
    if (i.dispatcher.switched_off(api_domain::driver, cbid)) continue;
    i.lib.enable_callback(on ? 1 : 0, i.subscriber, SANITIZER_CB_DOMAIN_DRIVER_API, cbid);
  }
}

// Note [The subscription dropped for a benchmark]
// With the launch callbacks off (Note [Launches unseen for a benchmark]) a
// block still pays for the subscription: the callbacks of every other call
// it keeps (torch's module calls, cuKernelGetFunction and the occupancy
// queries, come with every few launches), and whatever the Sanitizer API
// does for a subscribed process at calls it does not report. So a
// benchmark may also drop the subscription between blocks and take it
// again (on an H200's MLP loop, such blocks took 328 to 392 ms against 401
// to 444 with the subscription kept, and native processes of the same
// rounds 329 to 370 ms: docs/pytorch.md, Overhead). A block without it runs
// as the program does without streamsan, but for the loaded library and
// its idle threads; every call in it goes unseen (a false negative by
// design, and a model that misses what the block allocated, freed or
// loaded: a benchmark's steady state has none of that). Taken again, the
// subscription is the one enable() made: launch callbacks on, the launch
// domain as the patched modules want. Refused (an exception, nothing
// changed) while a module is patched: its patched code reads launch data
// that only the launch callbacks keep current.
void sanitizer_source::set_subscribed(bool on) {
  auto& i = *impl_;
  {
    std::lock_guard lock(i.callbacks_mutex);
    if (on == (i.subscriber != nullptr)) return;
    if (!on) {
      if (!i.tracker.patched_modules().empty()) {
        throw std::runtime_error("the subscription is kept while a module is patched");
      }
      const SanitizerResult r = i.lib.unsubscribe(i.subscriber);
      if (r != SANITIZER_SUCCESS) {
        throw std::runtime_error("sanitizerUnsubscribe: " + i.lib.describe(r));
      }
      i.subscriber = nullptr;
      i.launch_callbacks_on = false;
      return;
    }
    i.subscribe();
  }
  i.update_launch_callbacks();
}

void sanitizer_source::impl::on_api_exit(thread_state& me, const api_call& call) {
  const api_domain domain = call.domain;
  const std::uint32_t cbid = call.cbid;
  // Only a measured launch's exit sets the expectation, so only it clears it.
  const auto id = tracker.launched();
  if (id) model.expect_measured_launch(*id);
  std::vector<cuda_model::measured_graph_node> graph_nodes;
  if (me.graph_launch.is(domain, cbid)) [[unlikely]] {
    graph_nodes = graph_launch_exit();
    if (!graph_nodes.empty()) model.expect_measured_graph_launch(graph_nodes);
  }
  dispatcher.dispatch(call);
  if (id) model.clear_expected_measured_launch();
  if (!graph_nodes.empty()) model.clear_expected_measured_graph_launch();
  const bool launch_exit = me.launch_call.is(domain, cbid);
  if (launch_exit) {
    me.launch_call.active = false;
    me.ptds_launch = false;
  }
  release_launching(me, domain, cbid);
  // A launch call has no role (test CallRole.NoLaunchCallHasARole).
  if (launch_exit || outcome_of(call) != api_outcome::succeeded) return;
  switch (decode_call_role(call).role) {
    case call_role::context_synchronize:
      on_context_synchronized(std::exchange(me.synchronize_entered, 0));
      unpatch_unwanted_modules();
      return;
    case call_role::host_wait: unpatch_unwanted_modules(); return;
    case call_role::other:
    case call_role::module_call:
    case call_role::graph_launch:
    case call_role::graph_instantiate:
    case call_role::graph_exec_destroy:
    case call_role::stream_destroy: return;
  }
}

// Note [Unpatched at a synchronize]
// The default mode patches a module for its kernels' first launches per
// stream and unpatches it at a later launch that wants nothing, when none
// of its kernels can run (Note [Module changes back off]). A loop that
// keeps its streams busy (a training step between two synchronizes) gives
// that chance to the first launch after a synchronize only, so every other
// module stayed patched: its kernels ran patched code and every launch
// took the launch callbacks (the MLP loop of bench/torch: 15 modules
// patched, 4 still patched at its end, the launch callbacks on throughout).
// So the exit of a synchronize (of the context, a stream or an event), when
// streams are likeliest idle, tries to unpatch every patched module whose
// last launch wanted no measurement; one whose kernels may still run stays
// patched until its next chance.
//
// A module patched when it loaded and never launched from (cuBLAS loads
// modules it may never use; an occupancy query loads a kernel's module
// without a launch) wants nothing either: the same MLP loop on an H200
// (2026-11-28) ended with 3 such modules patched ("kernel ?", no launch),
// which kept the launch callbacks on for all of its 78,781 launches. Its
// first launch patches it again if it wants a measurement. A module whose
// kernels ran as graph nodes keeps its patch as before (its nodes can be
// measured only while it is patched: Note [No patching for a graph
// launch]), until an ordinary launch of it wants nothing.
void sanitizer_source::impl::unpatch_unwanted_modules() {
  if (policy != measurement_policy::on_demand) return;
  std::vector<CUmodule> unwanted = tracker.patched_modules();
  if (unwanted.empty()) return;
  {
    std::lock_guard lock(mutex);
    std::erase_if(unwanted, [&](CUmodule module) {
      const auto it = wanted_at_last_launch.find(module);
      return it != wanted_at_last_launch.end() && it->second;
    });
  }
  for (const CUmodule module : unwanted) {
    change_module(nullptr, module, false, false);
    if (!tracker.is_patched(module)) unpatched_at_synchronize.fetch_add(1, std::memory_order_relaxed);
  }
}

// Note [No lock across driver calls]: the driver calls below may load a
// module lazily, and the module-loaded callback patches it and takes the
// mutex (a self-deadlock on the H100 when they ran under it). So the
// lookup is done unlocked and only its result is stored under the mutex.
kernel_entry sanitizer_source::impl::look_up_kernel(std::uintptr_t handle) const {
  kernel_entry k;
  // Note [CUkernel or CUfunction]: a CUkernel has a function in the
  // current context; a CUfunction is its own.
  if (driver.kernel_get_function(&k.function, reinterpret_cast<CUkernel>(handle)) != CUDA_SUCCESS) {
    k.function = reinterpret_cast<CUfunction>(handle);
  }
  if (driver.func_get_module(&k.module, k.function) != CUDA_SUCCESS) k.module = nullptr;
  const char* mangled = nullptr;
  if (driver.func_get_name(&mangled, k.function) == CUDA_SUCCESS && mangled != nullptr) {
    k.name = parse_kernel_signature(mangled).name;
  }
  return k;
}

// Note [Settled launches]
// In the default mode's steady state every launch's kernel was measured on
// its stream before and no candidate names a kernel: nothing is wanted, and
// the answer for a (kernel, stream) pair stays no until the source forgets
// what it measured (a module unloaded, a context destroyed), a candidate
// asks for a kernel (any_wanted), or the program's work becomes able to
// overlap (Note [First launches are measured once work can overlap]). So
// each thread keeps the last few pairs it was told no for, with the
// decision generation they were told under (settling_generation()),
// and answers them without the lock: one lock less per launch. A pair
// answered yes never settles, so a first launch on a new stream is always
// decided under the lock.
launch_facts sanitizer_source::impl::decide(thread_state& me, std::uintptr_t handle,
                                            CUstream stream) {
  const bool may_settle = policy == measurement_policy::on_demand &&
                          !any_wanted.load(std::memory_order_acquire);
  const std::uint64_t generation = settling_generation();
  if (may_settle && me.settled_generation == generation) {
    for (const auto& s : me.settled) {
      if (s.handle == handle && s.stream == stream) {
        return {s.function, s.module, false, s.measured_here};
      }
    }
  }
  launch_facts f = decide_settling(handle, stream);
  if (may_settle && !f.want && generation == settling_generation()) {
    if (me.settled_generation != generation) {
      me.settled = {};
      me.settled_generation = generation;
    }
    me.settled[me.settled_next++ % me.settled.size()] = {handle, stream, f.function, f.module,
                                                         f.measured_here};
  }
  return f;
}

// One lock for a kernel seen before, and nothing copied (the name stays in
// the table).
launch_facts sanitizer_source::impl::decide_settling(std::uintptr_t handle, CUstream stream) {
  {
    std::lock_guard lock(mutex);
    if (const auto it = kernels.find(handle); it != kernels.end()) {
      return decide_locked(it->second, stream);
    }
  }
  kernel_entry k = look_up_kernel(handle);
  std::lock_guard lock(mutex);
  return decide_locked(kernels.emplace(handle, std::move(k)).first->second, stream);
}

launch_facts sanitizer_source::impl::decide_locked(const kernel_entry& k, CUstream stream) {
  const bool measured_here = measured_once.count({k.function, stream}) != 0;
  launch_facts f{k.function, k.module, wants_locked(k, measured_here), measured_here};
  if (failed_modules.empty()) return f;
  if (const auto it = failed_modules.find(k.module); it != failed_modules.end()) {
    it->second.kernels.insert(k.name);
    f.want = false;
  }
  return f;
}

bool sanitizer_source::impl::wants_locked(const kernel_entry& k, bool measured_here) const {
  if (policy == measurement_policy::every_launch) return true;
  // Note [First launches are measured once work can overlap]
  if (!measured_here && model.work_may_overlap()) return true;
  return wanted_by_name_locked(k.name);
}

bool sanitizer_source::impl::wanted_by_name_locked(std::string_view name) const {
  if (!any_wanted.load(std::memory_order_acquire)) return false;
  const auto it = wanted.find(name);
  return it != wanted.end() && it->second > 0;
}

// The entry of a launch call: decide whether the launch is measured, make
// sure its module is patched then (not later: Note [Which launches are
// measured]) or unpatched when nothing in it is wanted, and size its table.
void sanitizer_source::impl::on_launch_entry(thread_state& me, const launch_request& request,
                                             const void* stream) {
  me.measure_launch = false;
  me.slot_estimate = 0;
  const auto s = static_cast<CUstream>(const_cast<void*>(stream));
  const launch_facts facts = decide(me, request.kernel, s);
  const CUmodule module = facts.module;
  bool want = facts.want;
  if (policy == measurement_policy::on_demand && !model.work_may_overlap()) {
    // Note [A callback counter only when asked]: a locked add on one shared
    // line at every launch of a program that uses one stream.
    if (counting_api_callbacks) launches_before_overlap.fetch_add(1, std::memory_order_relaxed);
    // Note [First launches are measured once work can overlap]: a stream
    // made out of sight is first seen here, the host runs beside every
    // stream, and its accesses are seen only when they happen.
    const stream_arg on{reinterpret_cast<std::uintptr_t>(stream), me.ptds_launch};
    if (!want && !facts.measured_here && module != nullptr &&
        model.launch_may_race(on, request.kernel, request.args)) {
      want = true;
    }
  }
  me.key = {facts.function, s};
  if (module == nullptr) {
    hold_launching(me, me.launch_call.domain, me.launch_call.cbid);
    return;
  }
  // Note [Nothing of ours while a stream captures]
  // In cudaStreamCaptureModeGlobal (the default) an allocation, a
  // synchronous copy or a module (un)load anywhere in the process
  // invalidates the capture, and a measurement needs the first two (its
  // table, its read-back) and patching the third. So while any stream
  // captures, no launch is measured (it keeps its inferred footprint), no
  // read-back is polled, and no module is patched or unpatched: all of it
  // resumes at the first launch after the capture ends.
  if (model.any_capture_active()) {
    hold_launching(me, me.launch_call.domain, me.launch_call.cbid);
    return;
  }
  // Work issued to a capturing stream does not run (S-GRAPH-1), and our own
  // memset on that stream would end the capture: measured as a graph node,
  // not here.
  if (want && capturing(s)) want = false;
  if (any_ptds_pending.load(std::memory_order_acquire)) verify_own_default_stream();
  if (want && !tracker.is_patched(module)) {
    // The module of the launching thread's context.
    CUcontext ctx = nullptr;
    if (change_due() && driver.ctx_get_current(&ctx) == CUDA_SUCCESS && ctx != nullptr) {
      try_change(ctx, module, true);
    }
  } else if (!want && policy == measurement_policy::on_demand && tracker.is_patched(module)) {
    if (change_due()) try_change(nullptr, module, false);  // retried at a later launch
  }
  // From here to the call's exit no module changes: whether this launch
  // runs patched code is what is_patched says now.
  hold_launching(me, me.launch_call.domain, me.launch_call.cbid);
  me.measure_launch = want && tracker.is_patched(module);
  if (me.measure_launch) {
    me.slot_estimate = model.estimate_footprint_slots(request.kernel, request.args);
  }
  me.pending = me.ptds_launch ? thread_state::pending_kind::own_default_stream
                              : thread_state::pending_kind::module_stream;
  me.pending_module = module;
  me.pending_stream = s;
  me.pending_wanted = want;
}

// Note [Stamps written through remembered slots]
// Every launch call's exit stamps its (module, stream) in launched_on and
// its want in wanted_at_last_launch: a hash lookup and a tree walk, whose
// buckets and nodes the driver's own launch path has evicted by then
// (Note [Our launch path with cold caches]). A thread's launches go to a
// few pairs, so it remembers where it wrote the last four and writes
// there again. The nodes of both containers stay where they are until
// erased, and every erasure changes lists_generation, which makes the
// remembered slots stale; generations are unique across sources (tests
// make several in one thread), as the decisions' are. callgrind on
// BM_SourceLaunch (release, host, 2026-11-30): 2,949 -> 2,893
// instructions a launch, with two streams per module; a tree of many
// streams saves more.
void sanitizer_source::impl::stamp_module_stream_locked(thread_state& me, std::uint64_t stamp) {
  if (me.slots_generation != lists_generation) {
    me.slots = {};
    me.slots_generation = lists_generation;
  }
  for (auto& slot : me.slots) {
    if (slot.stamp != nullptr && slot.module == me.pending_module &&
        slot.stream == me.pending_stream) {
      *slot.stamp = stamp;
      *slot.wanted = me.pending_wanted;
      return;
    }
  }
  auto& slot = me.slots[me.slots_next++ % me.slots.size()];
  slot = {me.pending_module, me.pending_stream,
          &launched_on[me.pending_module][me.pending_stream],
          &wanted_at_last_launch[me.pending_module]};
  *slot.stamp = stamp;
  *slot.wanted = me.pending_wanted;
}

// Note [Stamped at the launch call's exit]
// A context synchronize forgets the work stamped before it began. A stamp
// taken at the launch call's entry could precede a synchronize that began
// on another thread before the kernel was enqueued, and that synchronize
// would then forget a kernel it never waited for: a module change could
// rewrite a running kernel's code. So the launch (and graph launch) call
// stamps its stream at its exit, when the work is enqueued, and before it
// lets go of `launching`: no change can run in between.
void sanitizer_source::impl::add_pending_work(thread_state& me) {
  const auto kind = std::exchange(me.pending, thread_state::pending_kind::none);
  if (kind == thread_state::pending_kind::none) return;
  const std::uint64_t stamp = launch_seq.fetch_add(1, std::memory_order_acq_rel) + 1;
  std::lock_guard lock(mutex);
  switch (kind) {
    case thread_state::pending_kind::module_stream:
      stamp_module_stream_locked(me, stamp);
      return;
    case thread_state::pending_kind::own_default_stream:
      if (me.id == 0) me.id = next_thread_id.fetch_add(1) + 1;
      ptds_pending[me.id] = stamp;
      any_ptds_pending.store(true, std::memory_order_release);
      return;
    case thread_state::pending_kind::graph_stream:
      graph_streams[me.pending_stream] = stamp;
      return;
    case thread_state::pending_kind::none: return;
  }
}

// Note [No module change while a module loads]
// On an H200 (2026-11-29) examples/programs/module_churn (threads loading
// and unloading modules while others launch) died of SIGSEGV inside
// sanitizerUnpatchModule in 5 of 49 default-mode runs (the stack from
// bench/profile's sampler with PCSAMPLE_ON_FAULT=1), each in a run where
// a module-loaded callback had given up waiting for our patch lock (Note [A
// module-loaded callback waits a bounded time] in launch_tracker.cpp): the
// unpatch had waited inside the Sanitizer API for the driver's lock while
// another thread loaded a module, and went on to crash once the load was
// done. So no patch or unpatch overlaps a call that may load or unload a
// module: such calls (call_role::module_call: loads and unloads, the
// getters that put a library's module into a context, and the calls on a
// function handle that lazy loading makes load its module) hold
// `launching` shared from their entry to their exit, as launches do, and
// keep their callbacks for it; a change takes it exclusive without waiting
// and is put off meanwhile. A module that the driver loads inside a call
// not in that list (an internal lazy load we do not know of) is still
// unguarded. Tests: SanitizerSource.NoModuleIsUnpatchedWhileAnotherThread-
// LoadsOne, and ModulesLoadAndUnloadWhileOtherThreads* over a fake that
// holds a driver's lock where the driver does (Note [A driver lock in the
// fake]); under ThreadSanitizer the code before this and the bounded wait
// fails them with a lock-order inversion.
//
// Note [A module changes only while none of its kernels runs]
// sanitizerPatchModule and sanitizerUnpatchModule rewrite a module's code in
// place. A kernel of that module already running on the GPU then executes
// half-old, half-new code: on an H100 the default mode, which patches a
// module for a kernel's first launch on each stream and unpatches it after,
// made cuda_stress (32 threads x 64 streams) fail with "an illegal
// instruction was encountered". So a module changes only when none of its
// kernels can be running:
//  - every launch call (and graph launch call) holds `launching` shared
//    from its entry to its exit, and a change takes it exclusive, without
//    waiting (try_lock): a launch being enqueued is never missed, and a
//    change never stalls the program. A stream destroy call holds it too,
//    and takes its stream out of the lists at entry: a change never asks a
//    freed handle (cuStreamQuery on one crashed inside the driver under
//    cuda_stress, whose threads destroy their streams while others launch);
//  - the streams each module's kernels were launched on since last seen
//    idle, and every graph launch's stream, are asked (cuStreamQuery, which
//    orders nothing) and must all be idle;
//  - work no other thread can query (a per-thread default stream: each
//    thread asks its own at its next launch) or that no query can see (a
//    stream destroyed while busy) blocks every change until seen idle or
//    until a context synchronize; a synchronize forgets only what was
//    launched before it began (entries are stamped).
// A change that cannot happen now is skipped: a launch that wanted a
// measurement keeps its inferred footprint (a possible race, never a
// confirmed one), a module that wanted unpatching is retried at its next
// launch. --precise patches modules when they load, before any of their
// kernels can run, and never unpatches.
void sanitizer_source::impl::hold_launching(thread_state& me, api_domain domain,
                                            std::uint32_t cbid) {
  if (me.holding.active) return;
  launching.lock_shared();
  me.holding.begin(domain, cbid);
}

void sanitizer_source::impl::release_launching(thread_state& me, api_domain domain,
                                               std::uint32_t cbid) {
  if (!me.holding.is(domain, cbid)) return;
  add_pending_work(me);
  launching.unlock_shared();
  me.holding.active = false;
}

bool sanitizer_source::impl::stream_idle(CUstream stream) const {
  return driver.stream_query(stream) == CUDA_SUCCESS;
}

void sanitizer_source::impl::verify_own_default_stream() {
  thread_state& me = tls_thread;
  if (me.id == 0) return;
  {
    std::lock_guard lock(mutex);
    if (!ptds_pending.contains(me.id)) return;
  }
  if (!stream_idle(CU_STREAM_PER_THREAD)) return;
  std::lock_guard lock(mutex);
  ptds_pending.erase(me.id);
  any_ptds_pending.store(!ptds_pending.empty(), std::memory_order_release);
}

bool sanitizer_source::impl::module_idle(CUmodule module) {
  std::vector<CUstream> streams;
  {
    std::lock_guard lock(mutex);
    if (unseen_work != 0 || !ptds_pending.empty()) return false;
    if (const auto it = launched_on.find(module); it != launched_on.end()) {
      for (const auto& [stream, stamp] : it->second) streams.push_back(stream);
    }
    for (const auto& [stream, stamp] : graph_streams) streams.push_back(stream);
  }
  for (const CUstream stream : streams) {
    if (!stream_idle(stream)) return false;
  }
  // Under `launching` exclusive no launch added anything meanwhile.
  std::lock_guard lock(mutex);
  launched_on.erase(module);
  lists_changed_locked();
  graph_streams.clear();
  return true;
}

void sanitizer_source::impl::change_module(CUcontext ctx, CUmodule module, bool patched,
                                           bool drain) {
  std::unique_lock change(launching, std::try_to_lock);
  if (!change.owns_lock()) {
    changes_locked_out.fetch_add(1, std::memory_order_relaxed);
    transitions_deferred.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (!module_idle(module) && !(drain && waited_for_drain(module))) {
    transitions_deferred.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (patched) {
    patch(ctx, module);
    return;
  }
  // Note [Launches read back before an unpatch]
  if (tracker.in_flight() > 0 && !model.any_capture_active()) poll(false);
  unpatch(module);
}

// Note [Launches read back before an unpatch]
// The tracker unpatches no module while one of its measured launches waits
// to be read back (launch_tracker::unpatch_module), and a launch is read
// back by a poll, at the entry of an API call, once its event has completed
// (Note [A launch is read back when its event has completed]). A module's
// first unpatch try comes at the entry of a launch just after its measured
// ones, whose kernels were still running at that entry's poll; when the
// try then waits for the module's streams to drain (Note [Waiting for a
// module's streams to drain]), those kernels end during the wait, and
// nothing read them back before the unpatch, which was refused. So the
// wait unpatched a module only when its measured kernels had ended before
// the try began, never when they ended during it: bench/injection's
// pipeline, a tenth of its
// compute, drained in 1.2 ms of its 5 ms wait and still ran its 123 later
// launches patched, `drain_waits=1 (drained 1)` and `unpatched=0` until the
// final synchronize (H200, 2026-12-02, docs/injection.md). Idle streams
// mean completed events: a poll first reads them back.

// Note [Waiting for a module's streams to drain]
// A busy program keeps a module patched after its kernels' first launches
// were measured (Note [Module changes back off]): every later launch of it
// then takes the launch callbacks and runs patched code. Right after the
// measured launch, only it and a few launches behind it are queued, so the
// first unpatch try after each patch waits up to STREAMSAN_UNPATCH_WAIT_MS
// (20 ms unless set) for the module's streams to drain, polling them, with
// `launching` held (other threads' launch calls wait meanwhile). On an
// H200 (2026-11-30) bench/precise/busy_streams, two non-blocking streams
// of bandwidth-bound kernels that hand over by events and never go idle
// until the end, took 1,077 ms for its 2,000 launches under the default
// mode without the wait (native 29.6 ms): 36 times native, the module
// patched throughout (205 failed tries on launch_loop, the same shape).
// With a 5 ms wait it took 33-34 ms; the first try drained. The wait is
// bounded because the queued work may wait on the host (a host function,
// a stream memory wait) that this thread has yet to release; it comes once
// per patch, not once per round of tries, so a program whose streams
// never drain within it (a kernel longer than the wait) pays it once per
// measurement, not at every synchronize that starts a new round.
//
// 20 ms rather than 5 since 2026-12-02: bench/injection's pipeline (four
// streams of long compute kernels the host runs ahead of) needed 11 ms to
// drain after its first launches were measured. With 20 ms it ran 1.006x
// and 1.009x native (two calls of 7 and 11 rounds), with 5 ms 1.011x and
// 1.010x, its module patched to the end (H200, docs/injection.md, "The
// pipeline's 1% taken apart"): within the noise, but on the right side of
// #11's 1.01x. A program whose waits never drain pays 20 ms per patch.
bool sanitizer_source::impl::first_drain(CUmodule module) {
  std::lock_guard lock(mutex);
  return drained_since_patch.insert(module).second;
}

bool sanitizer_source::impl::waited_for_drain(CUmodule module) {
  const time_added_to timed(drain_wait_ns);
  drain_waits.fetch_add(1, std::memory_order_relaxed);
  if (!drained_within(module, unpatch_wait)) return false;
  drained.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool sanitizer_source::impl::drained_within(CUmodule module, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    if (module_idle(module)) return true;
  }
  return false;
}

// Note [Module changes back off]
// A module changes only when none of its kernels can run (Note [A module
// changes only while none of its kernels runs]), and a program that keeps
// its streams busy (a launch-bound loop, a training loop between its
// synchronizes) never shows them idle: each of its launches asked the
// streams again (a cuStreamQuery per stream and launch), to unpatch a
// module after its kernels' first launches were measured, or to patch it
// for a first launch on another stream (455 ns instead of 205 ns a launch
// in bench/injection's BM_SourceLaunchBusyStreams, with a fake driver whose
// query costs nothing). So after k failed tries in a row the next one waits
// for 2^(k-1) - 1 more launches, at most 1,023: the first retry is still
// the next launch, and a loop pays a query about every thousand launches.
// A launch that wanted a measurement meanwhile keeps its inferred
// footprint, as when a change is deferred. A synchronize (of the context, a
// stream or an event: a training loop's loss.item() waits on its stream),
// after which streams may be idle, makes the next launch try again.
void sanitizer_source::impl::try_change(CUcontext ctx, CUmodule module, bool patched) {
  const std::uint64_t now = launch_seq.load(std::memory_order_acquire);
  // Note [Waiting for a module's streams to drain]: an unpatch, once
  // after each patch.
  const bool drain = !patched && unpatch_wait.count() > 0 && first_drain(module);
  change_module(ctx, module, patched, drain);
  if (tracker.is_patched(module) == patched) {
    retry_changes_now();
    return;
  }
  const std::uint32_t failed = change_deferrals.fetch_add(1, std::memory_order_acq_rel) + 1;
  const std::uint64_t skip = (std::uint64_t{1} << std::min<std::uint32_t>(failed - 1, 10)) - 1;
  change_after.store(now + skip + 1, std::memory_order_release);
}

void sanitizer_source::impl::on_graph_launch_entry(thread_state& me, const call_facts& f,
                                                   api_domain domain, std::uint32_t cbid) {
  if (!me.graph_launch.active) {  // not the driver call nested in the runtime's
    me.graph_launch.begin(domain, cbid);
    me.graph_nodes_seen = false;
    // Note [Nothing of ours while a stream captures]
    // No module is patched here (Note [No patching for a graph launch]).
    me.measure_graph = graph_nodes && !model.any_capture_active();
  }
  hold_launching(me, domain, cbid);
  me.pending = thread_state::pending_kind::graph_stream;
  me.pending_stream = static_cast<CUstream>(const_cast<void*>(f.stream));
}

// Note [No patching for a graph launch]
// With a module patched at the graph launch call's entry, under a graph
// instantiated while it was unpatched, every graph of graph_capture_fork and
// graph_memory_capture (kernels first launched into a capture, so their
// module loaded and was left unpatched then) died with "an illegal
// instruction was encountered" on an H200 (2026-11-28). Whether patching
// between graph launches, for ordinary launches, can do the same is not
// known: the torch suite's graphed training patches and unpatches modules
// around its graphs (26 patches, 20 unpatches) and passed on the same H200.
// So a graph launch patches nothing, and a graph node is measured only
// when its module was patched before (--precise: at load, or before the
// next graph instantiation when a stream was capturing at load: Note
// [Patched before a graph is instantiated]; the default mode: while its
// first launches per stream are measured); the nodes of other modules keep
// inferred footprints and their candidates stay possible races.
std::vector<cuda_model::measured_graph_node> sanitizer_source::impl::graph_launch_exit() {
  thread_state& me = tls_thread;
  me.graph_launch.active = false;
  std::vector<cuda_model::measured_graph_node> out;
  if (!std::exchange(me.graph_nodes_seen, false)) return out;
  for (const auto& n : tracker.graph_launched()) out.push_back({n.id, n.node});
  return out;
}

// Note [Patched before a graph is instantiated]
// --precise patches a module when it loads, unless a stream captures then
// (Note [Nothing of ours while a stream captures]): a kernel first launched
// into a capture loads its module lazily, unpatched. Patching it at the
// graph launch broke the graph instantiated before (Note [No patching for a
// graph launch]), and a kernel that only ever runs in graphs has no
// ordinary launch to patch it at. So its module is patched at the entry of
// the next graph instantiation, when no stream captures: the executable
// graph is made from patched code, as it is for modules loaded outside a
// capture. On an H200 (2026-11-28) this made graph_capture_fork_racy's
// race confirmed with --precise (its nodes measured), with every example
// and the 42 cuda-samples cases as before. A module whose change must wait
// (one of its kernels may run: Note [A module changes only while none of
// its kernels runs]) is tried again at the next instantiation or its first
// ordinary launch; a graph instantiated meanwhile keeps inferred footprints
// for its nodes.
void sanitizer_source::impl::on_graph_instantiate_entry() {
  if (policy != measurement_policy::every_launch || model.any_capture_active()) return;
  std::vector<std::pair<CUmodule, CUcontext>> pending;
  {
    std::lock_guard lock(mutex);
    if (loaded_unpatched.empty()) return;
    pending.assign(loaded_unpatched.begin(), loaded_unpatched.end());
  }
  for (const auto& [module, ctx] : pending) {
    if (!tracker.is_patched(module)) change_module(ctx, module, true, false);
    const bool done = tracker.is_patched(module);
    std::lock_guard lock(mutex);
    if (done || failed_modules.contains(module)) loaded_unpatched.erase(module);
  }
}

// A destroyed stream's work still runs, and its handle can no longer be
// asked: busy now, it blocks every change until a context synchronize.
void sanitizer_source::impl::on_stream_destroy_entry(CUstream stream) {
  bool known = false;
  {
    std::lock_guard lock(mutex);
    for (auto& [module, streams] : launched_on) known |= streams.erase(stream) != 0;
    if (known) lists_changed_locked();
    known |= graph_streams.erase(stream) != 0;
  }
  if (!known || stream_idle(stream)) return;
  const std::uint64_t stamp = launch_seq.load(std::memory_order_acquire);
  std::lock_guard lock(mutex);
  unseen_work = stamp;
}

// Every kernel launched before a context synchronize began has ended; what
// other threads launched meanwhile may still run.
void sanitizer_source::impl::on_context_synchronized(std::uint64_t entered) {
  const auto older = [entered](const auto& entry) { return entry.second <= entered; };
  std::lock_guard lock(mutex);
  std::size_t erased = 0;
  for (auto it = launched_on.begin(); it != launched_on.end();) {
    erased += std::erase_if(it->second, older);
    it = it->second.empty() ? launched_on.erase(it) : std::next(it);
  }
  if (erased > 0) lists_changed_locked();
  std::erase_if(graph_streams, older);
  std::erase_if(ptds_pending, older);
  any_ptds_pending.store(!ptds_pending.empty(), std::memory_order_release);
  if (unseen_work <= entered) unseen_work = 0;
  retry_changes_now();  // Note [Module changes back off]
}

void sanitizer_source::impl::on_launch(Sanitizer_CallbackId cbid, const Sanitizer_LaunchData& d) {
  if (cbid == SANITIZER_CBID_LAUNCH_BEGIN) {
    thread_state& me = tls_thread;
    launches.fetch_add(1, std::memory_order_relaxed);
    // Graph node launches happen outside a launch call: not measured yet.
    const bool measure = me.launch_call.active && me.measure_launch;
    if (measure) {
      std::lock_guard lock(mutex);
      // A settled launch may hold that this pair was never measured.
      if (measured_once.insert(me.key).second) {
        decision_generation.store(new_decision_generation(), std::memory_order_release);
      }
      const auto name = d.functionName ? parse_kernel_signature(d.functionName).name : std::string();
      if (const auto it = wanted.find(name); it != wanted.end() && it->second > 0) --it->second;
    }
    tracker.launch_begin(d, measure, me.slot_estimate);
    me.measure_launch = false;
  } else if (cbid == SANITIZER_CBID_LAUNCH_END) {
    tracker.launch_end(d);
  }
}

bool sanitizer_source::impl::capturing(CUstream stream) const {
  // Stream 0 in a launch call is a default stream; the per-thread one is the
  // only default stream that can capture.
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUstream s = stream == nullptr ? CU_STREAM_PER_THREAD : stream;
  if (driver.stream_is_capturing(s, &status) != CUDA_SUCCESS) return false;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// Note [Graph nodes in patched modules]: a kernel node of a patched module
// runs the patched code and reads its function's data, null unless the
// node is measured (Note [Which graph nodes are measured]); a node outside
// a graph launch call we saw (an upload, a launch from the device) is not.
void sanitizer_source::impl::on_graph_node(const Sanitizer_GraphNodeLaunchData& d) {
  if (d.nodeType != CU_GRAPH_NODE_TYPE_KERNEL) return;
  thread_state& me = tls_thread;
  if (!me.graph_launch.active || d.isGraphUpload != 0) {
    tracker.graph_node_unmeasured(d.launchData, reinterpret_cast<std::uintptr_t>(d.graphExec),
                                  reinterpret_cast<std::uintptr_t>(d.node));
    return;
  }
  bool want = me.measure_graph;
  std::string name;
  if (want && policy == measurement_policy::on_demand) {
    // Named only while a candidate asks for some kernel.
    want = any_wanted.load(std::memory_order_acquire) && d.launchData.functionName != nullptr;
    if (want) name = parse_kernel_signature(d.launchData.functionName).name;
    std::lock_guard lock(mutex);
    want = want && wanted_by_name_locked(name);
    // Note [Unpatched at a synchronize]: a module of graph nodes stays
    // patched unless an ordinary launch of it says otherwise.
    wanted_at_last_launch.try_emplace(d.launchData.module, true);
  }
  if (want) {
    std::lock_guard lock(mutex);
    if (const auto it = failed_modules.find(d.launchData.module); it != failed_modules.end()) {
      if (!name.empty()) it->second.kernels.insert(name);
      want = false;
    }
  }
  me.graph_nodes_seen = true;
  const bool measured =
      tracker.graph_node_begin(d.launchData, reinterpret_cast<std::uintptr_t>(d.graphExec),
                               reinterpret_cast<std::uintptr_t>(d.node), want);
  if (measured && policy == measurement_policy::on_demand) {
    std::lock_guard lock(mutex);
    if (const auto it = wanted.find(name); it != wanted.end() && it->second > 0) --it->second;
  }
}

void sanitizer_source::impl::patch(CUcontext ctx, CUmodule module) {
  const time_added_to timed(change_ns);
  std::string why;
  switch (tracker.patch_module(ctx, module, why)) {
    case sa::launch_tracker::patch_outcome::patched:
      {
        std::lock_guard lock(mutex);
        drained_since_patch.erase(module);
      }
      update_launch_callbacks();
      return;
    case sa::launch_tracker::patch_outcome::refused: patch_refused(module, why); return;
    case sa::launch_tracker::patch_outcome::busy: return;  // waits without a limit: never
  }
}

void sanitizer_source::impl::patch_refused(CUmodule module, const std::string& why) {
  std::lock_guard lock(mutex);
  failed_modules.emplace(module, failure{why, {}});
}

// Under the driver's lock: waits a bounded time for another thread's
// (un)patch (Note [A module-loaded callback waits a bounded time] in
// launch_tracker.cpp), else leaves the module to its first launch or, with
// --precise, to a graph's instantiation, like one loaded during a capture.
void sanitizer_source::impl::patch_at_load(CUcontext ctx, CUmodule module) {
  std::string why;
  switch (tracker.patch_module(ctx, module, why, patch_at_load_wait)) {
    case sa::launch_tracker::patch_outcome::patched: update_launch_callbacks(); return;
    case sa::launch_tracker::patch_outcome::refused: patch_refused(module, why); return;
    case sa::launch_tracker::patch_outcome::busy: {
      patches_put_off_at_load.fetch_add(1, std::memory_order_relaxed);
      if (policy != measurement_policy::every_launch) return;
      std::lock_guard lock(mutex);
      loaded_unpatched[module] = ctx;
      return;
    }
  }
}

void sanitizer_source::impl::unpatch(CUmodule module) {
  const time_added_to timed(change_ns);
  std::string why;
  if (tracker.unpatch_module(module, why)) update_launch_callbacks();
}

// Note [Launch callbacks only while patched]
// A measured launch needs its launch callbacks (its table goes on through
// them), and so does every kernel of a patched module, measured or not:
// patched code reads the launch's userdata, which must then be null, never
// a stale pointer (graph nodes read their function's data instead, null
// outside the graph launch call that measures them: Note [Which graph nodes
// are measured]); the graph node callbacks are how nodes get measured. With
// no module patched (the default
// mode's steady state) nothing needs them, and they are switched off: two
// callbacks less per launch.
void sanitizer_source::impl::update_launch_callbacks() {
  // Not under `mutex`: enabling callbacks waits for launches in theirs,
  // which take `mutex` (Note [Sanitizer calls outside our lock]).
  std::lock_guard lock(callbacks_mutex);
  const bool wanted_on = !tracker.patched_modules().empty();
  if (wanted_on == launch_callbacks_on) return;
  const std::uint32_t on = wanted_on ? 1 : 0;
  lib.enable_domain(on, subscriber, SANITIZER_CB_DOMAIN_LAUNCH);
  lib.enable_callback(on, subscriber, SANITIZER_CB_DOMAIN_GRAPHS,
                      SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN);
  launch_callbacks_on = wanted_on;
}

void sanitizer_source::impl::on_resource(Sanitizer_CallbackId cbid, const void* data) {
  switch (cbid) {
    case SANITIZER_CBID_RESOURCE_MODULE_LOADED: {
      const auto& m = *static_cast<const Sanitizer_ResourceModuleData*>(data);
      if (!model.any_capture_active()) {
        // Nothing of it would be measured yet (Note [First launches are
        // measured once work can overlap]), and patched code is slow even
        // unmeasured: patched at the first launch that wants it instead.
        if (policy == measurement_policy::on_demand && !model.work_may_overlap()) return;
        patch_at_load(m.context, m.module);
        return;
      }
      // Patched at its first launch once the capture has ended instead, or
      // before a graph is instantiated (Note [Patched before a graph is
      // instantiated]).
      if (policy == measurement_policy::every_launch) {
        std::lock_guard lock(mutex);
        loaded_unpatched[m.module] = m.context;
      }
      return;
    }
    case SANITIZER_CBID_RESOURCE_MODULE_UNLOAD_STARTING: {
      const auto& m = *static_cast<const Sanitizer_ResourceModuleData*>(data);
      tracker.module_unloaded(m.module);
      update_launch_callbacks();
      {
        std::lock_guard lock(mutex);
        forget_decisions_locked();
        failed_modules.erase(m.module);
        loaded_unpatched.erase(m.module);
        wanted_at_last_launch.erase(m.module);
        lists_changed_locked();
        drained_since_patch.erase(m.module);
      }
      model.modules_unloaded();
      return;
    }
    case SANITIZER_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
      tracker.context_destroying(
          static_cast<const Sanitizer_ResourceContextData*>(data)->context);
      {
        std::lock_guard lock(mutex);
        forget_decisions_locked();
        wanted_at_last_launch.clear();
        lists_changed_locked();
        drained_since_patch.clear();
      }
      model.modules_unloaded();
      return;
    default:
      return;
  }
}

sa::launch_tracker::footprint_callback sanitizer_source::impl::to_model() {
  return [this](sa::launch_tracker::launch_id id, const precise::decoded_footprint& d) {
    // Busy on the decoding thread too (Note [Decoded on a thread of its
    // own]): a CUDA call made under the model is ours, not the program's.
    busy_guard busy(tls_thread);
    model.measured_launch_done(id, d);
  };
}

void sanitizer_source::impl::poll(bool wait_all) { tracker.poll(wait_all, to_model()); }

// On the thread that decoded (Note [A decoding job that throws]).
void sanitizer_source::impl::footprint_not_decoded(CUfunction f, const char* why) {
  std::lock_guard lock(mutex);
  auto [it, first] = decode_failures.try_emplace(kernel_name_locked(f));
  if (first) it->second.why = why;
  ++it->second.launches;
}

// The kernels looked up at launch entries name their functions; a graph
// node's kernel never launched alone, or one forgotten since, has no name.
std::string sanitizer_source::impl::kernel_name_locked(CUfunction f) const {
  for (const auto& [handle, k] : kernels) {
    if (k.function == f && !k.name.empty()) return k.name;
  }
  char unnamed[48];
  std::snprintf(unnamed, sizeof unnamed, "at CUfunction %p", static_cast<void*>(f));
  return unnamed;
}

// ---- the rest of the interface ----

void sanitizer_source::measure_kernel(std::string_view name, unsigned launches) {
  auto& i = *impl_;
  std::lock_guard lock(i.mutex);
  auto it = i.wanted.find(name);
  if (it == i.wanted.end()) it = i.wanted.emplace(std::string(name), 0).first;
  it->second = std::max(it->second, launches);
  i.any_wanted.store(true, std::memory_order_release);
}

void sanitizer_source::drain() noexcept {
  try {
    busy_guard busy(tls_thread);
    impl_->poll(true);
    // Note [A signal while the report is made]: what a hurried poll left.
    if (impl_->tracker.in_flight() > 0) impl_->tracker.abandon(impl_->to_model());
    impl_->tracker.wait_decoded();
  } catch (...) {
  }
}

void sanitizer_source::hurry() noexcept { impl_->tracker.hurry(); }

std::size_t sanitizer_source::abandon(std::chrono::steady_clock::time_point deadline) noexcept {
  try {
    busy_guard busy(tls_thread);
    const std::size_t n = impl_->tracker.abandon(impl_->to_model());
    impl_->tracker.wait_decoded_until(deadline);
    return n;
  } catch (...) {
    return 0;
  }
}

std::vector<std::string> sanitizer_source::patch_failures() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<std::string> out;
  for (const auto& [module, f] : impl_->failed_modules) {
    std::string kernels;
    for (const auto& k : f.kernels) kernels += (kernels.empty() ? "" : ", ") + k;
    out.push_back(f.why + (kernels.empty() ? "; none of its kernels was launched"
                                           : "; kernels " + kernels));
  }
  return out;
}

std::vector<std::string> sanitizer_source::decode_failures() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<std::string> out;
  for (const auto& [kernel, f] : impl_->decode_failures) {
    out.push_back("kernel " + printable_text(kernel) + ", " + std::to_string(f.launches) +
                  (f.launches == 1 ? " launch: " : " launches: ") + printable_text(f.why));
  }
  return out;
}

void sanitizer_source::set_table_headroom(std::uint32_t factor) noexcept {
  impl_->tracker.set_estimate_headroom(factor);
}

void sanitizer_source::set_unpatch_wait(std::chrono::milliseconds wait) noexcept {
  impl_->unpatch_wait = wait;
}

void sanitizer_source::count_api_callbacks() noexcept { impl_->counting_api_callbacks = true; }

void sanitizer_source::set_decode_thread(bool on) noexcept { impl_->tracker.set_decode_thread(on); }

void sanitizer_source::set_decode_hook(std::function<void()> hook) {
  impl_->tracker.set_decode_hook(std::move(hook));
}

sanitizer_source_stats sanitizer_source::stats() const {
  const auto t = impl_->tracker.stats();
  sanitizer_source_stats s;
  s.api_callbacks = impl_->api_callbacks.load();
  s.nested_api_callbacks = impl_->nested_api_callbacks.load();
  s.launches = impl_->launches.load();
  s.launches_before_overlap = impl_->launches_before_overlap.load();
  s.measured = t.measured;
  s.incomplete = t.incomplete;
  s.too_fragmented = t.too_fragmented;
  s.failed = t.failed;
  s.decode_failed = t.decode_failed;
  s.jobs_thrown = t.jobs_thrown;
  s.waits = t.waits;
  s.abandoned = t.abandoned;
  s.pages = t.pages;
  s.bytes_read_back = t.bytes_read_back;
  s.spilled = t.spilled;
  s.setup_ns = t.setup_ns;
  s.read_back_ns = t.read_back_ns;
  s.copy_ns = t.copy_ns;
  s.decode_ns = t.decode_ns;
  s.modules_patched = t.modules_patched;
  s.modules_unpatched = t.modules_unpatched;
  s.change_ns = impl_->change_ns.load();
  s.drain_waits = impl_->drain_waits.load();
  s.drained = impl_->drained.load();
  s.drain_wait_ns = impl_->drain_wait_ns.load();
  s.changes_locked_out = impl_->changes_locked_out.load();
  s.changes_deferred = impl_->transitions_deferred.load();
  s.patches_put_off_at_load = impl_->patches_put_off_at_load.load();
  s.unpatched_at_synchronize = impl_->unpatched_at_synchronize.load();
  const std::vector<CUmodule> patched = impl_->tracker.patched_modules();
  s.modules_patched_now = patched.size();
  std::lock_guard lock(impl_->mutex);
  for (const CUmodule m : patched) {
    sanitizer_source_stats::patched_module p{"?", false, 0};
    for (const auto& [handle, k] : impl_->kernels) {
      if (k.module == m) {
        p.kernel = k.name;
        break;
      }
    }
    if (const auto w = impl_->wanted_at_last_launch.find(m); w != impl_->wanted_at_last_launch.end()) {
      p.wanted_at_last_launch = w->second;
    }
    if (const auto l = impl_->launched_on.find(m); l != impl_->launched_on.end()) {
      p.busy_streams = l->second.size();
    }
    s.patched_now.push_back(std::move(p));
  }
  return s;
}

}  // namespace streamsan::injection
