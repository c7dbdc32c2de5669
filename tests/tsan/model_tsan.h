// A model of ThreadSanitizer's interface for testing the bridge without a
// TSan build: threads and fibers with vector clocks, sync cells, byte-range
// accesses checked for happens-before, shadow stacks and ignores. It is
// stricter than TSan where TSan's behavior is an implementation detail the
// bridge must not rely on: a new fiber starts ordered after nothing (TSan
// orders it after its creator), and every access ever made is remembered
// (TSan keeps four per 8 bytes). It also records misuse of the interface:
// a fiber switched in on two threads at once, a synchronizing switch, an
// unbalanced shadow stack or ignore count.
//
// The interface is C function pointers, so the model is a process-wide
// singleton: one model_tsan at a time.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sanitizer/tsan/tsan_runtime.h"

namespace streamsan::testing {

struct model_access {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  bool write = false;
  int context = 0;
  std::uint64_t epoch = 0;
  std::string context_name;
  std::vector<std::uint64_t> stack;  // innermost first (the access's pc first)
};

struct model_report {
  model_access current;
  model_access previous;
};

class model_tsan {
 public:
  model_tsan();
  ~model_tsan();
  model_tsan(const model_tsan&) = delete;
  model_tsan& operator=(const model_tsan&) = delete;

  static const tsan::tsan_api& api();

  // What instrumented program code does on the calling thread.
  void host_read(const void* address, std::uint64_t size, std::uint64_t pc = 0);
  void host_write(const void* address, std::uint64_t size, std::uint64_t pc = 0);

  std::vector<model_report> reports() const;
  std::vector<std::string> violations() const;
  // Fibers created and not destroyed.
  int live_fibers() const;
  void clear_reports();

 private:
  struct context {
    int id = 0;
    bool fiber = false;
    bool destroyed = false;
    std::string name;
    std::map<int, std::uint64_t> clock;
    std::vector<std::uint64_t> stack;  // outermost first
    int ignores = 0;
    std::thread::id active_on;  // fibers: the thread it is switched in on
  };

  friend struct model_entry_points;
  context& current_locked();
  void access_locked(std::uint64_t begin, std::uint64_t size, bool write, std::uint64_t pc);
  void violation_locked(std::string what) { violations_.push_back(std::move(what)); }

  mutable std::mutex mutex_;
  std::map<int, context> contexts_;
  std::map<std::thread::id, int> thread_contexts_;  // each thread's own context
  std::map<std::thread::id, int> current_;          // what each thread runs as
  std::map<std::uint64_t, std::map<int, std::uint64_t>> sync_;  // cell address -> clock
  std::vector<model_access> accesses_;
  std::vector<model_report> reports_;
  std::vector<std::string> violations_;
  int next_id_ = 1;
};

}  // namespace streamsan::testing
