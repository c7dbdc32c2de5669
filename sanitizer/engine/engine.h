// The happens-before engine: consumes the access log record by record and
// reports races between streams, between host and device, inside graphs, and
// misuse of streams, events and memory. The model is in docs/engine.md; each
// rule is a Note [...] block next to the code that applies it.
//
// Usage:
//   streamsan::engine eng;
//   eng.set_diagnostic_callback([](const diagnostic& d) { ... });
//   recorder.add_sink(eng);          // live, or replay a trace file into it
//   ... eng.diagnostics(), eng.tables() to print them ...
//
// The engine is single-threaded: feed it from one thread at a time (the
// recorder's lock already serializes on_record).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sanitizer/engine/diagnostic.h"
#include "sanitizer/engine/order_observer.h"
#include "sanitizer/log/log_tables.h"
#include "sanitizer/log/record.h"

namespace streamsan {

struct engine_options {
  // Fold diagnostics with the same kind and the same pair of call sites into
  // one entry and count the repeats (Note [Deduplication]).
  bool deduplicate = true;
  // How many freed allocations and destroyed events stay remembered, so that
  // a later use is reported as use-after-free / destroyed-event-use. Older
  // ones are forgotten to keep memory flat under allocation churn; a use of a
  // forgotten id counts as an access to an unknown allocation.
  std::uint32_t remembered_dead_objects = 1u << 16;
  // The same for destroyed streams (destroyed-stream-use). Fewer: producers
  // give a stream created on a reused handle a new id, so a destroyed id
  // comes back, if ever, right after its destroy. A forgotten one that is
  // named again is taken for a stream never announced (Note [Implicit
  // streams]).
  std::uint32_t remembered_destroyed_streams = 4096;
  // The slots of destroyed streams and exited threads are reused once no
  // stored access names them, found by a sweep after at least this many
  // have died (Note [Retiring context slots]). 0: never reuse slots (every
  // clock then grows with every stream and thread ever seen; for testing).
  std::uint32_t context_sweep_batch = 64;
  // Note [Race timelines]: how many recent operations the engine keeps for
  // race pictures (0: none, the default; the HTML and Chrome-trace reports
  // ask for it), how many of them one race's timeline shows, and for how
  // many races a timeline is kept (later ones get none).
  std::uint32_t timeline_window = 0;
  std::uint32_t timeline_ops = 40;
  std::uint32_t timeline_races = 64;
};

// A window that suits the HTML and Chrome-trace reports.
inline constexpr std::uint32_t default_timeline_window = 512;

// Counters for what the engine saw but did not turn into diagnostics, and
// for the memory it holds. Cheap to read (walks the live allocations).
struct engine_statistics {
  std::uint64_t records = 0;
  std::uint64_t accesses_checked = 0;       // accesses applied to a history
  std::uint64_t accesses_untracked = 0;     // alloc == none: not tracked
  std::uint64_t accesses_unknown_alloc = 0; // alloc id never allocated (or forgotten)
  std::uint64_t accesses_captured = 0;      // issued to a capturing stream
  std::uint64_t host_host_conflicts = 0;    // two host threads: not a CUDA race
  // Conflicts between cooperative launches on different devices, which may
  // synchronize on the device (Note [Kernels that synchronize on the
  // device]): not checked, counted, and named at exit.
  std::uint64_t device_synchronized_conflicts = 0;
  // Conflicts whose earlier side a host thread had already seen complete
  // before the later side was issued, so host threads may order them in
  // ways the log does not show (Note [Host threads order what the log does
  // not show]): not reported, counted, and named at exit.
  std::uint64_t host_ordered_conflicts = 0;
  std::uint64_t unmatched_nvtx_pops = 0;    // nvtx_pop on an empty stack
  std::uint64_t implicit_streams = 0;       // used before any stream_create
  std::uint64_t unknown_graph_launches = 0; // launch of a graph never instantiated
  std::uint64_t unknown_frees = 0;          // free of an id never allocated
  std::uint64_t ignored_records = 0;        // duplicate creates, bad graph edges, ...
  std::uint64_t duplicate_diagnostics = 0;  // folded into an earlier entry
  std::uint64_t confirmed_candidates = 0;   // candidates a measured conflict confirmed
  // Memory held.
  std::uint64_t contexts = 0;               // live streams + host threads
  std::uint64_t dead_contexts = 0;          // dead, slot still named by stored accesses
  std::uint64_t context_slots = 0;          // slot numbers in use or free (high-water mark)
  std::uint64_t retired_contexts = 0;       // slots handed back for reuse so far
  std::uint64_t context_sweeps = 0;
  std::uint64_t live_allocations = 0;
  std::uint64_t remembered_allocations = 0; // freed, kept for use-after-free
  std::uint64_t history_segments = 0;
  std::uint64_t history_reads = 0;
  std::uint64_t history_atomics = 0;
  std::uint64_t history_bytes = 0;          // segments + read sets, by capacity
  std::uint64_t clock_bytes = 0;            // vector clocks of contexts and events
  std::uint64_t report_bytes = 0;           // near-miss calls, timeline window and timelines
};

class engine_impl;

class engine final : public record_sink {
 public:
  explicit engine(engine_options options = {});
  ~engine() override;
  engine(engine&& other) noexcept;
  engine& operator=(engine&& other) noexcept;
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;

  void on_record(const record& r) override;  // feed every record, in log order

  // Called once per NEW diagnostic (after dedup) when it is found, and once
  // more when a candidate becomes confirmed (Note [Deduplication]): live
  // printing prints what is_candidate() says is not a candidate, and the
  // capture side measures the kernels inferred_sides() names of what is.
  // The reference is valid only during the call.
  void set_diagnostic_callback(std::function<void(const diagnostic&)> callback);

  // Announces every ordering decision and access to `observer` (not owned;
  // nullptr removes it), for a mirror in another race detector
  // (order_observer.h). Costs one branch per join and access when unset.
  void set_order_observer(order_observer* observer) noexcept;

  // Deduplicated (same kind + same pair of call sites => one entry, count++),
  // in the order found; candidates and confirmed diagnostics alike
  // (diagnostic::certainty).
  const std::vector<diagnostic>& diagnostics() const noexcept;

  // Strings, stacks and frame symbols seen, plus the NVTX range paths the
  // engine defines itself (ids >= first_engine_string_id).
  const log_tables& tables() const noexcept;

  // Unmodelled CUDA API calls seen (unmodelled_call records): name -> count.
  const std::map<std::string, std::uint64_t, std::less<>>& unmodelled_calls() const noexcept;

  std::uint64_t records_processed() const noexcept;

  engine_statistics statistics() const;

 private:
  std::unique_ptr<engine_impl> impl_;
};

// operation_ref::nvtx_range ids the engine defines in its tables start here,
// so they never clash with the producer's string ids (Note [NVTX paths]).
inline constexpr std::uint32_t first_engine_string_id = 0x80000000u;

}  // namespace streamsan
