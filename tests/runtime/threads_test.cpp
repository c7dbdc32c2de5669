// Several host threads using the runtime at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/runtime/runtime_test_support.h"

namespace streamsan::rt {
namespace {

constexpr int threads = 4;
constexpr int rounds = 50;
constexpr std::uint64_t n = 256;

// Each thread owns a stream and a buffer, and ends with the value it expects.
void run_threads(std::vector<float>& results) {
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([t, &results] {
      stream s;
      auto a = allocate_device(n * sizeof(float));
      auto sum = allocate_pinned_host(sizeof(float));
      for (int r = 0; r < rounds; ++r) {
        launch(s, kernels::fill{a, static_cast<float>(t)});
        launch(s, kernels::scale{a, 2.0f});
      }
      launch(s, kernels::reduce_sum{a, sum});
      s.synchronize();
      results[static_cast<std::size_t>(t)] = host_read_at<float>(sum, 0);
    });
  }
  for (auto& w : workers) w.join();
}

TEST(Threads, ConcurrentThreadsEachSeeTheirOwnWork) {
  initialize(testing::test_options());
  std::vector<float> results(threads, -1.0f);
  run_threads(results);
  for (int t = 0; t < threads; ++t) {
    EXPECT_EQ(results[static_cast<std::size_t>(t)], 2.0f * static_cast<float>(t * n)) << t;
  }
  shutdown();
}

TEST(Threads, IndependentThreadsGetNoReports) {
  auto options = testing::test_options();
  options.sanitize = true;
  options.print_diagnostics = false;
  initialize(options);
  std::vector<float> results(threads, -1.0f);
  run_threads(results);
  EXPECT_TRUE(sanitizer_diagnostics().empty());
  shutdown();
}

TEST(Threads, PerThreadDefaultStreamsAreIndependent) {
  auto options = testing::test_options();
  options.per_thread_default_stream = true;
  initialize(options);
  std::vector<stream_id> ids(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([t, &ids] {
      auto a = allocate_device(n * sizeof(float));
      launch(default_stream(), kernels::fill{a, 1.0f});
      default_stream().synchronize();
      ids[static_cast<std::size_t>(t)] = default_stream().id();
    });
  }
  for (auto& w : workers) w.join();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end());
  shutdown();
}

// Which thread logged what, in log order.
class thread_log final : public record_sink {
 public:
  void on_record(const record& r) override {
    std::lock_guard lock(mutex_);
    entries_.push_back({r.header.thread, r.body.index()});
  }
  struct entry {
    thread_id thread;
    std::size_t kind;
  };
  std::vector<entry> entries() const {
    std::lock_guard lock(mutex_);
    return entries_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<entry> entries_;
};

// Note [Threads end in the log]
TEST(Threads, AnEndingThreadLogsThreadExitAfterItsLastRecord) {
  initialize(testing::test_options());
  thread_log log;
  add_log_sink(log);
  std::thread([] {
    stream s;
    auto a = allocate_device(n * sizeof(float));
    launch(s, kernels::fill{a, 1.0f});
    s.synchronize();
  }).join();  // the buffer and the stream die first, then the thread
  synchronize();
  remove_log_sink(log);
  const auto entries = log.entries();
  const std::size_t exit_kind = record_body(thread_exit{}).index();
  const auto exit = std::find_if(entries.begin(), entries.end(),
                                 [&](const auto& e) { return e.kind == exit_kind; });
  ASSERT_NE(exit, entries.end());
  EXPECT_EQ(std::count_if(entries.begin(), entries.end(),
                          [&](const auto& e) { return e.kind == exit_kind; }),
            1);
  const thread_id worker = exit->thread;
  const auto worker_records = std::count_if(entries.begin(), exit, [&](const auto& e) {
    return e.thread == worker && e.kind == record_body(stream_destroy{}).index();
  });
  EXPECT_EQ(worker_records, 1);  // its stream was destroyed before it ended
  EXPECT_TRUE(std::none_of(std::next(exit), entries.end(),
                           [&](const auto& e) { return e.thread == worker; }));
  // The main thread (which called synchronize() after) did not end.
  EXPECT_NE(entries.back().thread, worker);
  shutdown();
}

TEST(Threads, AThreadThatNeverCalledTheRuntimeLogsNothing) {
  initialize(testing::test_options());
  thread_log log;
  add_log_sink(log);
  const auto before = log.entries().size();
  std::thread([] {}).join();
  remove_log_sink(log);
  EXPECT_EQ(log.entries().size(), before);
  shutdown();
}

}  // namespace
}  // namespace streamsan::rt
