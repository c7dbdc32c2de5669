// A driver_queries that answers from tables, for tests and benchmarks of
// the model on machines without a GPU. The model asks some questions
// without its lock (Note [No driver calls under the model's lock]), so
// several threads may ask at once, as they may ask the real driver: what a
// fake (or a fake derived from this one) writes while answering must be
// atomic or under a lock of its own. The tables are filled before the
// threads start and only read afterwards.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "inject/model/driver_queries.h"

namespace streamsan::injection {

class fake_driver : public driver_queries {
 public:
  std::int32_t device = 0;
  std::map<std::uintptr_t, kernel_description> kernels;
  std::map<std::uintptr_t, raw_graph> graphs;
  std::map<std::uintptr_t, stream_description> foreign_streams;
  std::map<std::uintptr_t, capture_frontier> captures;  // by stream handle
  std::map<std::uint64_t, std::uint64_t> ranges;  // base -> size (allocation_range)
  // Atomic: the model asks without its lock (Note [Kernel handles die with
  // their module]), so two threads' first launches of one kernel ask at once.
  std::atomic<int> kernel_queries = 0;

  std::int32_t current_device() override { return device; }
  std::optional<stream_description> describe_stream(std::uintptr_t s) override {
    const auto it = foreign_streams.find(s);
    if (it == foreign_streams.end()) return std::nullopt;
    return it->second;
  }
  std::optional<kernel_description> describe_kernel(std::uintptr_t k) override {
    ++kernel_queries;
    const auto it = kernels.find(k);
    if (it == kernels.end()) return std::nullopt;
    return it->second;
  }
  std::string graph_failure;  // graph_read_failure() after a graph not in `graphs`
  std::optional<raw_graph> describe_graph(std::uintptr_t g) override {
    const auto it = graphs.find(g);
    if (it == graphs.end()) return std::nullopt;
    return it->second;
  }
  std::string graph_read_failure() override { return graph_failure; }
  memory_kind untracked_memory_kind(std::uint64_t, memory_side side) override {
    return side == memory_side::device ? memory_kind::device : memory_kind::pageable_host;
  }
  std::optional<capture_frontier> capture_frontier_of(std::uintptr_t s) override {
    const auto it = captures.find(s);
    if (it == captures.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::pair<std::uint64_t, std::uint64_t>> allocation_range(
      std::uint64_t address) override {
    auto it = ranges.upper_bound(address);
    if (it == ranges.begin()) return std::nullopt;
    --it;
    if (address - it->first >= it->second) return std::nullopt;
    return std::pair<std::uint64_t, std::uint64_t>{it->first, it->second};
  }
  std::string function_name(std::uintptr_t fn) override {
    return "host_fn_" + std::to_string(fn);
  }

  // Host functions of the library's own (Note [A host function that ran
  // orders the host]): kept until run_host_functions(); the ones never run
  // are run when the fake goes, after the model (their data is freed then).
  struct enqueued {
    std::uintptr_t stream;
    void (*fn)(void*);
    void* data;
  };
  std::vector<enqueued> host_functions;
  bool accept_host_functions = true;
  bool enqueue_host_function(std::uintptr_t stream, void (*fn)(void*), void* data) override {
    if (!accept_host_functions) return false;
    const std::lock_guard<std::mutex> hold(host_functions_mutex_);
    host_functions.push_back({stream, fn, data});
    return true;
  }
  void run_host_functions() {
    std::vector<enqueued> due;
    {
      const std::lock_guard<std::mutex> hold(host_functions_mutex_);
      due = std::exchange(host_functions, {});
    }
    for (const auto& h : due) h.fn(h.data);  // unlocked: a function may enqueue again
  }
  ~fake_driver() override { run_host_functions(); }

 private:
  std::mutex host_functions_mutex_;  // the model enqueues without its lock
};

}  // namespace streamsan::injection
