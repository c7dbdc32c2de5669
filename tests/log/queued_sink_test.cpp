// The queued sink of Note [The engine runs on its own thread]: the records
// come out on the consumer thread, all of them, in order, with their
// payloads copied; a full ring makes the producer wait; close() drains.
#include "sanitizer/log/queued_sink.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sanitizer/log/jsonl_dump.h"
#include "sanitizer/log/recorder.h"
#include "tests/log/sample_log.h"

namespace streamsan {
namespace {

using namespace std::chrono_literals;

// Keeps what it was given, and on which thread.
class keeping_sink final : public record_sink {
 public:
  void on_record(const record& r) override {
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    std::lock_guard lock(mutex_);
    dump_.on_record(r);
    seqs_.push_back(r.header.seq);
    threads_.push_back(std::this_thread::get_id());
  }
  std::string text() const {
    std::lock_guard lock(mutex_);
    return out_.str();
  }
  std::vector<std::uint64_t> seqs() const {
    std::lock_guard lock(mutex_);
    return seqs_;
  }
  std::vector<std::thread::id> threads() const {
    std::lock_guard lock(mutex_);
    return threads_;
  }
  std::chrono::microseconds delay{0};

 private:
  mutable std::mutex mutex_;
  std::ostringstream out_;
  jsonl_dumper dump_{out_};
  std::vector<std::uint64_t> seqs_;
  std::vector<std::thread::id> threads_;
};

std::string dumped(const std::vector<record>& log) {
  std::ostringstream out;
  jsonl_dumper dump(out);
  for (const auto& r : log) dump.on_record(r);
  return out.str();
}

TEST(QueuedSink, DeliversEveryKindInOrderOnItsOwnThread) {
  const auto log = testing::sample_log();
  keeping_sink kept;
  queued_sink q(queued_sink_options{.capacity = 8});
  q.add_downstream(kept);
  q.start();
  for (int round = 0; round < 3; ++round) {
    for (const auto& r : log) q.on_record(r);
  }
  q.close();
  EXPECT_EQ(kept.text(), dumped(log) + dumped(log) + dumped(log));
  for (const auto id : kept.threads()) EXPECT_NE(id, std::this_thread::get_id());
  EXPECT_EQ(q.statistics().delivered, 3 * log.size());
  EXPECT_EQ(q.statistics().dropped, 0u);
}

// Note [Records are views]: the producer may reuse its storage as soon as
// on_record returns.
TEST(QueuedSink, CopiesThePayloadBeforeReturning) {
  keeping_sink kept;
  queued_sink q;
  q.add_downstream(kept);
  std::vector<access> accesses{access{{alloc_id{3}, 16, 64}, access_mode::write}};
  std::vector<graph_node> nodes{graph_node{graph_node_kind::kernel, string_id{1}, accesses}};
  std::vector<graph_edge> edges{graph_edge{0, 0}};
  std::string text = "kernel text";
  std::vector<std::uint64_t> frames{0x1000, 0x2000};
  q.on_record(record{{1, thread_id{}, stack_id{}}, string_define{string_id{1}, text}});
  q.on_record(record{{2, thread_id{}, stack_id{}}, stack_define{stack_id{1}, frames}});
  q.on_record(record{{3, thread_id{1}, stack_id{1}},
                     kernel_launch{stream_id{1}, string_id{1}, accesses}});
  q.on_record(record{{4, thread_id{1}, stack_id{}}, graph_instantiate{graph_id{1}, nodes, edges}});
  accesses[0] = access{};
  nodes[0] = graph_node{};
  edges[0] = graph_edge{7, 7};
  text.assign(text.size(), 'x');
  frames.assign(frames.size(), 0);
  q.start();
  q.close();
  const auto out = kept.text();
  EXPECT_NE(out.find("\"text\":\"kernel text\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"0x1000\""), std::string::npos) << out;
  EXPECT_EQ(out.find("xxxx"), std::string::npos) << out;
  // The launch and the graph node each keep their access at offset 16.
  std::size_t at = 0, found = 0;
  while ((at = out.find("\"offset\":16,\"size\":64", at)) != std::string::npos) ++found, ++at;
  EXPECT_EQ(found, 2u) << out;
  EXPECT_NE(out.find("\"from\":0,\"to\":0"), std::string::npos) << out;
}

// Note [A launch goes straight into its slot]: its copy knows the launch's
// payload fields by name; this fails when kernel_launch gains another.
TEST(QueuedSink, ALaunchsOwnCopyMovesWhatTheGeneralCopyWould) {
  EXPECT_TRUE(queued_sink::launch_copy_is_complete());
}

// A consumer slower than the producer: the producer waits, nothing is lost,
// the order holds.
TEST(QueuedSink, AFullRingMakesTheProducerWait) {
  keeping_sink kept;
  kept.delay = 200us;
  queued_sink q(queued_sink_options{.capacity = 4, .wake_batch = 2});
  q.add_downstream(kept);
  q.start();
  constexpr std::uint64_t n = 64;
  for (std::uint64_t seq = 1; seq <= n; ++seq) {
    q.on_record(record{{seq, thread_id{1}, stack_id{}}, nvtx_pop{}});
    EXPECT_LE(seq - q.statistics().delivered, 4u) << "more records queued than the ring holds";
  }
  q.close();
  const auto seqs = kept.seqs();
  ASSERT_EQ(seqs.size(), n);
  for (std::uint64_t i = 0; i < n; ++i) EXPECT_EQ(seqs[i], i + 1);
  EXPECT_GT(q.statistics().producer_waits, 0u);
}

// busy_ns is the consumer's time inside the downstream sinks: at least
// what a sink that sleeps 200 us a record took, and not its sleeps between
// batches.
TEST(QueuedSink, BusyTimeCountsTheSinksWork) {
  keeping_sink kept;
  kept.delay = 200us;
  queued_sink q(queued_sink_options{.capacity = 64, .wake_batch = 1});
  q.add_downstream(kept);
  q.start();
  EXPECT_EQ(q.statistics().busy_ns, 0u);
  constexpr std::uint64_t n = 16;
  for (std::uint64_t seq = 1; seq <= n; ++seq) {
    q.on_record(record{{seq, thread_id{1}, stack_id{}}, nvtx_pop{}});
  }
  std::this_thread::sleep_for(300ms);  // the consumer idles: not busy
  q.close();
  const auto busy = std::chrono::nanoseconds(q.statistics().busy_ns);
  EXPECT_GE(busy, n * 200us);
  EXPECT_LT(busy, n * 200us + 150ms);
}

// Records still queued when close() is called are delivered before it
// returns; later ones are dropped and counted.
TEST(QueuedSink, CloseDrainsAndLaterRecordsAreDropped) {
  keeping_sink kept;
  kept.delay = 100us;
  queued_sink q(queued_sink_options{.capacity = 1024, .wake_batch = 1024, .tick = 1s});
  q.add_downstream(kept);
  q.start();
  for (std::uint64_t seq = 1; seq <= 200; ++seq) {
    q.on_record(record{{seq, thread_id{1}, stack_id{}}, nvtx_pop{}});
  }
  q.close();
  EXPECT_EQ(kept.seqs().size(), 200u);
  q.on_record(record{{201, thread_id{1}, stack_id{}}, nvtx_pop{}});
  q.close();
  EXPECT_EQ(kept.seqs().size(), 200u);
  EXPECT_EQ(q.statistics().dropped, 1u);
}

// Records 1 to n, each an nvtx_pop.
void queue_pops(queued_sink& q, std::uint64_t n) {
  for (std::uint64_t seq = 1; seq <= n; ++seq) {
    q.on_record(record{{seq, thread_id{1}, stack_id{}}, nvtx_pop{}});
  }
}

// Note [A report within the time a signal leaves]: close_by() stops the
// consumer at a record boundary once its deadline passed; the records
// delivered are the first ones, in order, and the rest are counted.
TEST(QueuedSink, CloseByStopsAtItsDeadlineAndCountsWhatItLeft) {
  keeping_sink kept;
  kept.delay = 20ms;
  queued_sink q(queued_sink_options{.capacity = 1024, .wake_batch = 1});
  q.add_downstream(kept);
  q.start();
  constexpr std::uint64_t n = 200;  // 4 s of delivery
  queue_pops(q, n);
  const auto start = std::chrono::steady_clock::now();
  const std::uint64_t left = q.close_by(start + 100ms);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  const auto seqs = kept.seqs();
  EXPECT_GT(left, 0u);
  EXPECT_EQ(seqs.size() + left, n);
  for (std::size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(seqs[i], i + 1);
  EXPECT_EQ(q.statistics().undelivered, left);
  q.on_record(record{{n + 1, thread_id{1}, stack_id{}}, nvtx_pop{}});
  EXPECT_EQ(q.statistics().dropped, 1u);
}

// Everything delivered before the deadline: nothing is left, as with close().
TEST(QueuedSink, CloseByWithTimeToSpareDeliversEverything) {
  keeping_sink kept;
  queued_sink q;
  q.add_downstream(kept);
  q.start();
  queue_pops(q, 50);
  EXPECT_EQ(q.close_by(std::chrono::steady_clock::now() + 10s), 0u);
  EXPECT_EQ(kept.seqs().size(), 50u);
}

// Note [A signal while the report is made]: a close() under way returns
// soon after a give_up() from another thread, and counts what it left.
TEST(QueuedSink, GiveUpCutsACloseUnderWayShort) {
  keeping_sink kept;
  kept.delay = 20ms;
  queued_sink q(queued_sink_options{.capacity = 1024});
  q.add_downstream(kept);
  q.start();
  constexpr std::uint64_t n = 200;  // 4 s of delivery
  queue_pops(q, n);
  std::thread signal([&q] {
    std::this_thread::sleep_for(100ms);
    q.give_up();
  });
  const auto start = std::chrono::steady_clock::now();
  q.close();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  signal.join();
  const std::uint64_t left = q.statistics().undelivered;
  EXPECT_GT(left, 0u);
  EXPECT_EQ(kept.seqs().size() + left, n);
}

// After a give_up() nothing is delivered: a producer facing a full ring
// drops its record instead of waiting for room for ever.
TEST(QueuedSink, AfterGiveUpRecordsAreDroppedNotWaitedFor) {
  keeping_sink kept;
  kept.delay = 50ms;
  queued_sink q(queued_sink_options{.capacity = 4, .wake_batch = 1});
  q.add_downstream(kept);
  q.start();
  queue_pops(q, 4);
  q.give_up();
  queue_pops(q, 20);  // would wait for room behind a consumer that stopped
  q.close();
  EXPECT_EQ(q.statistics().dropped, 20u);
  EXPECT_EQ(kept.seqs().size() + q.statistics().undelivered, 4u);
}

TEST(QueuedSink, FlushWaitsForEverythingGivenBefore) {
  keeping_sink kept;
  queued_sink q(queued_sink_options{.wake_batch = 1u << 20, .tick = 10s});
  q.add_downstream(kept);
  q.start();
  std::this_thread::sleep_for(10ms);  // the consumer sleeps, for 10 s
  for (std::uint64_t seq = 1; seq <= 3; ++seq) {
    q.on_record(record{{seq, thread_id{1}, stack_id{}}, nvtx_pop{}});
  }
  const auto started = std::chrono::steady_clock::now();
  q.flush();
  EXPECT_EQ(kept.seqs().size(), 3u);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s) << "flush() waited for the tick";
}

// The session's shape: threads emit through a recorder, whose lock makes
// them one producer at a time; the sink sees the recorder's order.
TEST(QueuedSink, ManyThreadsThroughTheRecorderKeepTheLogOrder) {
  recorder rec(recorder_options{.capture_stacks = false});
  keeping_sink kept;
  queued_sink q(queued_sink_options{.capacity = 16, .wake_batch = 4});
  q.add_downstream(kept);
  q.start();
  rec.add_sink(q);
  constexpr int threads = 4, each = 500;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&rec, t] {
      const auto label = rec.intern("thread " + std::to_string(t));
      for (int i = 0; i < each; ++i) rec.emit(nvtx_mark{label});
    });
  }
  for (auto& w : workers) w.join();
  rec.remove_sink(q);
  q.close();
  const auto seqs = kept.seqs();
  ASSERT_EQ(seqs.size(), rec.records_emitted());
  for (std::size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(seqs[i], i + 1) << "at " << i;
  std::size_t marks = 0;
  for (std::size_t at = 0; (at = kept.text().find("nvtx_mark", at)) != std::string::npos; ++at) {
    ++marks;
  }
  EXPECT_EQ(marks, static_cast<std::size_t>(threads * each));
}

// Without a consumer thread (before start()), a full ring is emptied by the
// producer itself rather than waiting for a thread that is not there.
TEST(QueuedSink, WithoutAConsumerThreadTheProducerDelivers) {
  keeping_sink kept;
  queued_sink q(queued_sink_options{.capacity = 2});
  q.add_downstream(kept);
  for (std::uint64_t seq = 1; seq <= 5; ++seq) {
    q.on_record(record{{seq, thread_id{1}, stack_id{}}, nvtx_pop{}});
  }
  EXPECT_EQ(kept.seqs().size(), 4u);
  q.close();
  EXPECT_EQ(kept.seqs(), (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
}

// A child forked from a process with a queue has no consumer thread: what
// it records is delivered by its own thread when the ring fills, and at
// close(), instead of waiting for a thread that is not there.
TEST(QueuedSink, AForkedChildDeliversOnItsOwnThread) {
  class counting_sink final : public record_sink {
   public:
    void on_record(const record&) override { count.fetch_add(1); }
    std::atomic<std::uint64_t> count{0};
  } counted;
  queued_sink q(queued_sink_options{.capacity = 4});
  q.add_downstream(counted);
  q.start();
  std::uint64_t seq = 0;
  for (int i = 0; i < 3; ++i) q.on_record(record{{++seq, thread_id{1}, stack_id{}}, nvtx_pop{}});
  q.flush();  // the consumer is idle at the fork
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (int i = 0; i < 10; ++i) q.on_record(record{{++seq, thread_id{1}, stack_id{}}, nvtx_pop{}});
    const bool filled_and_delivered = counted.count.load() >= 3 + 10 - 4;
    q.close();
    std::_Exit(filled_and_delivered && counted.count.load() == 13 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(counted.count.load(), 3u);
  q.close();
}

// The program's signals go to the program's threads; a fault on the
// consumer thread still reaches the fatal-signal handler.
TEST(QueuedSink, TheConsumerThreadTakesNoneOfTheProgramsSignals) {
  class mask_sink final : public record_sink {
   public:
    void on_record(const record&) override { ::pthread_sigmask(SIG_BLOCK, nullptr, &mask); }
    sigset_t mask{};
  } seen;
  queued_sink q;
  q.add_downstream(seen);
  q.start();
  q.on_record(record{{1, thread_id{1}, stack_id{}}, nvtx_pop{}});
  q.close();
  for (const int sig : {SIGINT, SIGTERM, SIGCHLD, SIGALRM, SIGUSR1}) {
    EXPECT_EQ(sigismember(&seen.mask, sig), 1) << sig;
  }
  for (const int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) {
    EXPECT_EQ(sigismember(&seen.mask, sig), 0) << sig;
  }
  sigset_t here;
  ::pthread_sigmask(SIG_BLOCK, nullptr, &here);
  EXPECT_EQ(sigismember(&here, SIGTERM), 0) << "start() left the caller's mask changed";
}

// A launch's few accesses travel in the slot itself; a larger payload goes
// to the slot's arena, which keeps its capacity: once every slot has
// carried one, more allocate nothing.
TEST(QueuedSink, SteadyStateGrowsNoArena) {
  keeping_sink kept;
  queued_sink q(queued_sink_options{.capacity = 8});
  q.add_downstream(kept);
  q.start();
  const std::vector<access> few(2, access{{alloc_id{1}, 0, 256}, access_mode::read});
  const std::vector<access> many(16, access{{alloc_id{1}, 0, 256}, access_mode::read});
  std::uint64_t seq = 0;
  for (int i = 0; i < 1000; ++i) {
    q.on_record(record{{++seq, thread_id{1}, stack_id{}}, kernel_launch{stream_id{1}, {}, few}});
  }
  q.flush();
  EXPECT_EQ(q.statistics().arena_growths, 0u);
  for (int i = 0; i < 1000; ++i) {
    q.on_record(record{{++seq, thread_id{1}, stack_id{}}, kernel_launch{stream_id{1}, {}, many}});
  }
  q.close();
  EXPECT_EQ(q.statistics().arena_growths, 8u);
  EXPECT_EQ(kept.seqs().size(), 2000u);
  EXPECT_NE(kept.text().find("\"size\":256"), std::string::npos);
}

}  // namespace
}  // namespace streamsan
