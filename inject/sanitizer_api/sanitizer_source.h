// The capture source on NVIDIA's Compute Sanitizer API: the same runtime and
// driver calls as CUPTI's source, handed to the same dispatcher (Note [One
// table for every source]), plus what only this API offers: patching
// kernels to measure their footprints (Note [Footprints are coalesced on the
// device]).
//
// Note [Which launches are measured]
// --precise measures every launch; its modules are patched when they load.
// The default mode measures a kernel's first launch on each stream (so
// every kernel learns what its pointer words do, Note [Learned access
// modes], and a race between first launches is confirmed at once), once
// the program's work can overlap (Note [First launches are measured once
// work can overlap] in inject/model/concurrency_watch.h), and the next
// launches of kernels that a candidate names (measure_kernel()). Patched code costs
// even when a launch is not measured (a bandwidth-bound kernel ran 42x
// slower patched with no table, 56x under memcheck), so the default mode
// patches a module only while one of its kernels is to be measured, and
// removes the patches at the next call once nothing in it is. A module is
// patched at the entry of the launch call (or when it loads inside it),
// never from a launch callback, where patching hangs the driver.
// Graph kernel nodes (Note [Which graph nodes are measured] in
// launch_tracker.cpp): --precise measures, per kernel and exec, its first
// node (Note [A graph node keeps its per-launch data]) at every launch; the
// default mode measures it on its exec's next launch once a candidate names
// its kernel, never on a graph's first launch. Either way only while the kernel's module is
// already patched: a graph launch patches nothing (Note [No patching for a
// graph launch] in sanitizer_source.cpp).
//
// This header includes no sanitizer.h (it clashes with cupti.h): the
// session includes both sources' headers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "inject/capture/call_sites.h"
#include "inject/capture/dispatcher.h"
#include "inject/model/cuda_model.h"

namespace streamsan::injection {

enum class measurement_policy : std::uint8_t {
  every_launch,  // --precise
  on_demand,     // first launches and kernels named by candidates
};

// Note [Graph node measurement is on]
// Measuring graph kernel nodes (Note [Which graph nodes are measured]) rests
// on the Compute Sanitizer API's per-function callback data, which a probe
// on an H200 showed reaching node launches (docs/injection.md). Its first
// GPU run (H200, 2026-11-28) found two faults, fixed since: unmeasured
// nodes of a patched module carried a wild pointer (Note [Which graph nodes
// are measured]) and patching at a graph launch broke instantiated graphs
// (Note [No patching for a graph launch]). The fixed build, with it on,
// then gave every example's verdict in both modes, the 42 cuda-samples
// cases clean in both and the torch suite's 34 verdicts (H200, the same
// day), so it is on by default; STREAMSAN_GRAPH_NODES=off turns it off
// (graph kernel nodes then keep inferred footprints, and their races stay
// possible races).
enum class graph_node_measurement : std::uint8_t { off, on };

struct sanitizer_source_stats {
  // Counted only after count_api_callbacks() (Note [A callback counter only
  // when asked]).
  std::uint64_t api_callbacks = 0;
  // API callbacks of the driver calls our own callbacks made (ignored;
  // each costs the program a callback's price all the same).
  std::uint64_t nested_api_callbacks = 0;
  std::uint64_t launches = 0;
  // Launch calls while the program's work could not overlap yet (the
  // default mode measures only those into host-accessible memory, and
  // those a candidate asks for). Counted only after count_api_callbacks().
  std::uint64_t launches_before_overlap = 0;
  std::uint64_t measured = 0;
  std::uint64_t incomplete = 0;  // table overflow: kept the inferred footprint
  std::uint64_t too_fragmented = 0;  // of those, too many runs to use
  std::uint64_t failed = 0;
  std::uint64_t decode_failed = 0;  // tracker_stats::decode_failed
  std::uint64_t jobs_thrown = 0;    // tracker_stats::jobs_thrown
  std::uint64_t waits = 0;
  std::uint64_t abandoned = 0;  // tracker_stats::abandoned
  std::uint64_t pages = 0;
  std::uint64_t bytes_read_back = 0;
  std::uint64_t spilled = 0;       // tracker_stats::spilled
  std::uint64_t setup_ns = 0;      // tracker_stats::setup_ns
  std::uint64_t read_back_ns = 0;  // tracker_stats::read_back_ns
  std::uint64_t copy_ns = 0;       // tracker_stats::copy_ns
  std::uint64_t decode_ns = 0;     // tracker_stats::decode_ns
  std::uint64_t modules_patched = 0;
  std::uint64_t modules_unpatched = 0;
  // Time in patching and unpatching modules (the callbacks switched too).
  std::uint64_t change_ns = 0;
  // Note [Waiting for a module's streams to drain]: the waits, those that
  // drained, and their time.
  std::uint64_t drain_waits = 0;
  std::uint64_t drained = 0;
  std::uint64_t drain_wait_ns = 0;
  // Of changes_deferred, those put off because another thread was in a
  // launch or module call.
  std::uint64_t changes_locked_out = 0;
  // Patches and unpatches put off because a kernel of the module may run.
  std::uint64_t changes_deferred = 0;
  // Modules left unpatched when they loaded, another thread's (un)patch
  // holding the way (Note [A module-loaded callback waits a bounded time]).
  std::uint64_t patches_put_off_at_load = 0;
  // Of modules_unpatched, those unpatched at a synchronize's exit (Note
  // [Unpatched at a synchronize]).
  std::uint64_t unpatched_at_synchronize = 0;
  // Patched modules when the stats were taken.
  std::uint64_t modules_patched_now = 0;
  // Each of them, for STREAMSAN_DEBUG: a kernel of it launched, whether its
  // last launch wanted a measurement, and how many streams its kernels were
  // launched on since last seen idle (why it is still patched: Note
  // [Unpatched at a synchronize]).
  struct patched_module {
    std::string kernel;  // "?" when none of its kernels was launched
    bool wanted_at_last_launch = false;
    std::size_t busy_streams = 0;
  };
  std::vector<patched_module> patched_now;
};

class sanitizer_source {
 public:
  // The source, or nullptr with the reason in `why` (the Sanitizer API
  // library or a driver entry point is missing).
  static std::unique_ptr<sanitizer_source> create(
      api_dispatcher& dispatcher, cuda_model& model, measurement_policy policy, std::string& why,
      graph_node_measurement graph_nodes = graph_node_measurement::on);
  ~sanitizer_source();
  sanitizer_source(const sanitizer_source&) = delete;
  sanitizer_source& operator=(const sanitizer_source&) = delete;

  // Subscribes and starts the dispatcher; throws std::runtime_error with the
  // Sanitizer API's message on failure.
  void enable();
  // Note [Waiting for a module's streams to drain]: how long an unpatch may
  // wait, once, for the module's streams; zero (the default): not at all.
  void set_unpatch_wait(std::chrono::milliseconds wait) noexcept;
  // Note [A callback counter only when asked]: before enable().
  void count_api_callbacks() noexcept;
  // Note [Tables sized from measured launches] (launch_tracker.cpp): before
  // the first launch.
  void set_table_headroom(std::uint32_t factor) noexcept;
  // Note [Decoded on a thread of its own] (launch_tracker.cpp): measured
  // footprints finish decoding on a thread of their own; before enable().
  void set_decode_thread(bool on) noexcept;
  // Tests only: every decode runs `hook` first, on the thread that decodes;
  // what it throws, the decode threw (launch_tracker::set_decode_hook). Before
  // the first launch.
  void set_decode_hook(std::function<void()> hook);
  // The next `launches` launches of kernels with this name (the model's
  // short name) are measured (Note [Which launches are measured]).
  void measure_kernel(std::string_view name, unsigned launches);
  // Benchmarks only (Note [Launches paused for a benchmark]): while paused,
  // kernel launch calls pass through unmodelled and unchecked.
  void pause_launches(bool paused) noexcept;
  // Benchmarks only (Note [Runtime launch callbacks toggled for a
  // benchmark]): the plain runtime launch callbacks on or off from now on.
  void set_runtime_launch_callbacks(bool on);
  // Benchmarks only (Note [Launches unseen for a benchmark]): the driver's
  // kernel launch callbacks on or off from now on.
  void set_launch_callbacks(bool on);
  // Benchmarks only (Note [The subscription dropped for a benchmark]): the
  // Sanitizer API subscription dropped or taken again; throws, changing
  // nothing, while a module is patched.
  void set_subscribed(bool on);
  // Reads back every measured launch still in flight and waits until the
  // model has every footprint (at exit, before the report). Callbacks keep
  // coming until the dispatcher is stopped.
  void drain() noexcept;
  // At a signal, instead of drain(): every measured launch still in flight
  // keeps its inferred footprint, unread (Note [Launches in flight when the
  // program is stopped] in launch_tracker.cpp); waits for the decoding
  // thread until `deadline` at most. Returns how many launches were
  // abandoned.
  std::size_t abandon(std::chrono::steady_clock::time_point deadline) noexcept;
  // A drain() under way stops waiting for kernels, and abandons what it
  // has not read back (launch_tracker::hurry). Lock-free.
  void hurry() noexcept;
  // Modules that could not be patched and why (their kernels keep inferred
  // footprints), for the one-time note in the report.
  std::vector<std::string> patch_failures() const;
  // Kernels a measured footprint of which could not be decoded, each with
  // its launches so far and the first reason (Note [A decoding job that
  // throws] in launch_tracker.cpp), for the one-time note in the report.
  std::vector<std::string> decode_failures() const;
  sanitizer_source_stats stats() const;

 private:
  struct impl;
  explicit sanitizer_source(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

}  // namespace streamsan::injection
