// The corpus check of corpus_mirror.h over the real ThreadSanitizer: built
// only with -Db_sanitize=thread, where the runtime, the harness and this
// test are instrumented, so TSan sees the replay's real host reads and
// writes (and the host functions' bodies), not only the ones the engine
// logs. Each report is caught by TSan's __tsan_on_report hook and read
// with its debugging interface.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <sstream>

#include "harness/replay.h"
#include "sanitizer/tsan/tsan_runtime.h"
#include "tests/tsan/corpus_mirror.h"

#if !defined(__SANITIZE_THREAD__) && defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define __SANITIZE_THREAD__ 1
#endif
#endif
#if !defined(__SANITIZE_THREAD__)
#error "corpus_mirror_tsan_test.cpp is built with -fsanitize=thread only"
#endif

// TSan's debugging interface (tsan_debugging.cpp; not in its public header).
extern "C" {
int __tsan_get_report_data(void* report, const char** description, int* count, int* stack_count,
                           int* mop_count, int* loc_count, int* mutex_count, int* thread_count,
                           int* unique_tid_count, void** sleep_trace, unsigned long trace_size);
int __tsan_get_report_mop(void* report, unsigned long index, int* tid, void** address, int* size,
                          int* write, int* atomic, void** trace, unsigned long trace_size);
int __tsan_get_report_thread(void* report, unsigned long index, int* tid, std::uint64_t* os_id,
                             int* running, const char** name, int* parent_tid, void** trace,
                             unsigned long trace_size);
}

namespace {

std::mutex reports_mutex;
std::vector<streamsan::testing::mirror_report> caught;
std::size_t caught_total = 0;

void collect(void* report);

}  // namespace

extern "C" {

// Every report is wanted (the same stacks recur across scenarios).
const char* __tsan_default_options() {
  return "suppress_equal_stacks=0:suppress_equal_addresses=0:report_signal_unsafe=0";
}



void __tsan_ignore_thread_begin();
void __tsan_ignore_thread_end();

// Called by TSan after it printed a report, on whatever thread or fiber
// made the access, possibly a stream's fiber the bridge switched to on this
// thread's stack: TSan must not check the hook's own accesses (a race found
// inside a report deadlocks TSan).
void __tsan_on_report(void* report) {
  __tsan_ignore_thread_begin();
  collect(report);
  __tsan_ignore_thread_end();
}

}  // extern "C"

namespace {

void collect(void* report) {
  const char* description = nullptr;
  int count = 0, stacks = 0, mops = 0, locs = 0, mutexes = 0, threads = 0, tids = 0;
  void* sleep = nullptr;
  __tsan_get_report_data(report, &description, &count, &stacks, &mops, &locs, &mutexes, &threads,
                         &tids, &sleep, 0);
  streamsan::testing::mirror_report r;
  std::ostringstream text;
  text << (description ? description : "?");
  for (int i = 0; i < mops; ++i) {
    int tid = 0, size = 0, write = 0, atomic = 0;
    void* address = nullptr;
    void* trace[1] = {};
    __tsan_get_report_mop(report, static_cast<unsigned long>(i), &tid, &address, &size, &write,
                          &atomic, trace, 1);
    r.addresses.push_back(reinterpret_cast<std::uint64_t>(address));
    text << (i == 0 ? ": " : ", after ") << (write ? "write" : "read") << " of " << size
         << " bytes at " << address << " by T" << tid;
  }
  for (int i = 0; i < threads; ++i) {
    int tid = 0, running = 0, parent = 0;
    std::uint64_t os_id = 0;
    const char* name = nullptr;
    void* trace[1] = {};
    __tsan_get_report_thread(report, static_cast<unsigned long>(i), &tid, &os_id, &running, &name,
                             &parent, trace, 1);
    text << "; T" << tid << " is '" << (name ? name : "") << "'";
  }
  r.text = text.str();
  std::lock_guard lock(reports_mutex);
  caught.push_back(std::move(r));
  ++caught_total;
}

}  // namespace

namespace streamsan::testing {
namespace {

TEST(CorpusMirrorTsan, TheRuntimeIsFound) {
  const auto probe = tsan::probe_tsan_runtime();
  ASSERT_EQ(probe.status, tsan::probe_status::usable) << probe.message;
  std::cout << "ThreadSanitizer runtime: " << probe.runtime << '\n';
}

TEST(CorpusMirrorTsan, EveryScenarioWithAHostAccess) {
  const auto probe = tsan::probe_tsan_runtime();
  ASSERT_EQ(probe.status, tsan::probe_status::usable) << probe.message;
  const report_source source{
      [] {
        std::lock_guard lock(reports_mutex);
        caught.clear();
      },
      [] {
        std::lock_guard lock(reports_mutex);
        return std::exchange(caught, {});
      },
  };
  std::size_t checked = 0, reports = 0, missed = 0;
  for (const auto& s : corpus_scenarios()) {
    if (!has_host_access(s) || !harness::cannot_run(s, "sim").empty()) continue;
    ++checked;
    const auto v = check_scenario(s, probe.api, source);
    reports += v.reports;
    missed += v.missed.size();
    for (const auto& p : v.problems) ADD_FAILURE() << s.name << ": " << p;
    for (const auto& b : v.missed) {
      std::cout << "note: " << s.name << ": the engine's host-device race on " << b
                << " has no ThreadSanitizer report\n";
    }
  }
  std::cout << checked << " scenarios with host accesses, " << reports
            << " ThreadSanitizer reports, " << missed << " engine host-device races without one\n";
  EXPECT_GT(checked, 40u);
  EXPECT_GT(reports, 10u);
  std::lock_guard lock(reports_mutex);
  EXPECT_EQ(caught_total, reports) << "reports outside any scenario's replay";
}

}  // namespace
}  // namespace streamsan::testing

// The test, not TSan's exit status, decides what the reports mean: main
// leaves before TSan's exit handler turns "there were reports" into exit
// status 66 (a crash inside TSan still exits 66).
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int status = RUN_ALL_TESTS();
  std::fflush(nullptr);
  std::_Exit(status);
}
