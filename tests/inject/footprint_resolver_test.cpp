// The resolver holds the log behind a launch until its measured footprint
// comes back, then delivers everything in order with the measured accesses.
#include "inject/precise/footprint_resolver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "sanitizer/log/recorder.h"

namespace streamsan::precise {
namespace {

struct collecting_sink : record_sink {
  std::vector<std::uint64_t> seqs;
  std::vector<std::vector<access>> launch_accesses;
  std::vector<std::vector<std::vector<access>>> graph_node_accesses;
  void on_record(const record& r) override {
    seqs.push_back(r.header.seq);
    if (const auto* k = std::get_if<kernel_launch>(&r.body)) {
      launch_accesses.emplace_back(k->accesses.begin(), k->accesses.end());
    }
    if (const auto* g = std::get_if<graph_instantiate>(&r.body)) {
      auto& nodes = graph_node_accesses.emplace_back();
      for (const auto& n : g->nodes) nodes.emplace_back(n.accesses.begin(), n.accesses.end());
    }
  }
};

const std::vector<access> inferred{
    access{{alloc_id{1}, 0, 4096}, access_mode::read_write, access_origin::inferred}};
const std::vector<access> measured{
    access{{alloc_id{1}, 256, 512}, access_mode::write, access_origin::measured}};

class FootprintResolverTest : public ::testing::Test {
 protected:
  FootprintResolverTest() : rec_(recorder_options{false, 0}) {
    resolver_.add_downstream(sink_);
    rec_.add_sink(resolver_);
  }
  void launch() { rec_.emit(kernel_launch{stream_id{1}, string_id{}, inferred}); }
  void sync() { rec_.emit(device_synchronize{0}); }
  std::size_t delivered_after_thread_start() const { return sink_.seqs.size() - 1; }

  recorder rec_;
  footprint_resolver resolver_;
  collecting_sink sink_;
};

TEST_F(FootprintResolverTest, UnawaitedRecordsPassStraightThrough) {
  launch();
  sync();
  EXPECT_EQ(delivered_after_thread_start(), 2u);
  EXPECT_EQ(resolver_.held(), 0u);
}

TEST_F(FootprintResolverTest, HoldsTheLogBehindAnAwaitedLaunch) {
  sync();
  const auto t = resolver_.await_next_launch();
  launch();
  sync();
  sync();
  EXPECT_EQ(delivered_after_thread_start(), 1u);
  EXPECT_EQ(resolver_.held(), 3u);
  EXPECT_EQ(resolver_.awaiting(), 1u);
  resolver_.resolve(t, measured);
  EXPECT_EQ(delivered_after_thread_start(), 4u);
  EXPECT_EQ(resolver_.held(), 0u);
  ASSERT_EQ(sink_.launch_accesses.size(), 1u);
  EXPECT_EQ(sink_.launch_accesses[0], measured);
  // Order is issue order.
  EXPECT_TRUE(std::is_sorted(sink_.seqs.begin(), sink_.seqs.end()));
}

TEST_F(FootprintResolverTest, ResolutionsOutOfOrderDeliverInOrder) {
  const auto first = resolver_.await_next_launch();
  launch();
  const auto second = resolver_.await_next_launch();
  launch();
  sync();
  resolver_.resolve(second, measured);
  EXPECT_EQ(delivered_after_thread_start(), 0u);  // the first still holds everything
  resolver_.resolve(first, std::nullopt);
  EXPECT_EQ(delivered_after_thread_start(), 3u);
  ASSERT_EQ(sink_.launch_accesses.size(), 2u);
  EXPECT_EQ(sink_.launch_accesses[0], inferred);  // no measurement: kept
  EXPECT_EQ(sink_.launch_accesses[1], measured);
}

// Note [Held records in a vector]: a queue that never empties (a launch
// always awaiting) drops its delivered front and keeps the rest in order.
TEST_F(FootprintResolverTest, AQueueThatNeverEmptiesStaysInOrder) {
  auto waiting = resolver_.await_next_launch();
  launch();
  for (int round = 0; round < 20; ++round) {
    const auto next = resolver_.await_next_launch();
    launch();
    sync();
    resolver_.resolve(waiting, measured);  // delivers up to `next`, which waits
    EXPECT_EQ(resolver_.held(), 2u);
    EXPECT_EQ(resolver_.awaiting(), 1u);
    waiting = next;
  }
  resolver_.resolve(waiting, std::nullopt);
  EXPECT_EQ(resolver_.held(), 0u);
  EXPECT_EQ(delivered_after_thread_start(), 41u);
  EXPECT_TRUE(std::is_sorted(sink_.seqs.begin(), sink_.seqs.end()));
  ASSERT_EQ(sink_.launch_accesses.size(), 21u);
  EXPECT_EQ(sink_.launch_accesses[0], measured);
  EXPECT_EQ(sink_.launch_accesses[20], inferred);
}

TEST_F(FootprintResolverTest, AnotherThreadsLaunchIsNotTheAwaitedOne) {
  const auto t = resolver_.await_next_launch();
  std::thread([&] { launch(); }).join();  // another thread's launch passes
  EXPECT_EQ(resolver_.held(), 0u);
  launch();  // this thread's is held
  EXPECT_EQ(resolver_.held(), 1u);
  resolver_.resolve(t, measured);
  EXPECT_EQ(resolver_.held(), 0u);
}

TEST_F(FootprintResolverTest, ReleaseAllDeliversEverythingWithInferredAccesses) {
  resolver_.await_next_launch();
  launch();
  sync();
  resolver_.release_all();
  EXPECT_EQ(delivered_after_thread_start(), 2u);
  EXPECT_EQ(resolver_.awaiting(), 0u);
  EXPECT_EQ(sink_.launch_accesses.at(0), inferred);
}

TEST_F(FootprintResolverTest, CancelledAndUnknownTokensChangeNothing) {
  resolver_.await_next_launch();
  resolver_.cancel_await();
  launch();
  EXPECT_EQ(resolver_.held(), 0u);
  resolver_.resolve(12345, measured);
  EXPECT_EQ(resolver_.held(), 0u);
}

// Note [Measuring graph kernel nodes]: the graph logged again before a
// measured graph launch waits, with the launch behind it, for its nodes.
TEST_F(FootprintResolverTest, AnAwaitedGraphTakesItsMeasuredNodesAndKeepsTheOthers) {
  const graph_node nodes[] = {graph_node{graph_node_kind::kernel, string_id{}, inferred},
                              graph_node{graph_node_kind::kernel, string_id{}, inferred}};
  const auto t = resolver_.await_next_graph();
  launch();  // a kernel launch is not what this thread awaits
  EXPECT_EQ(resolver_.held(), 0u);
  rec_.emit(graph_instantiate{graph_id{1}, nodes, {}});
  rec_.emit(graph_launch{graph_id{1}, stream_id{1}});
  EXPECT_EQ(resolver_.held(), 2u);
  resolver_.resolve_nodes(t, {{1, measured}});
  EXPECT_EQ(resolver_.held(), 0u);
  ASSERT_EQ(sink_.graph_node_accesses.size(), 1u);
  EXPECT_EQ(sink_.graph_node_accesses[0].at(0), inferred);
  EXPECT_EQ(sink_.graph_node_accesses[0].at(1), measured);
}

// Note [Delivered outside the holding lock]: a sink that stops at its
// first kernel launch until let go, as the engine's full ring does.
struct gated_sink : record_sink {
  collecting_sink inner;  // one deliverer at a time: never two callers at once
  std::mutex m;
  std::condition_variable cv;
  bool reached = false, open = false;
  void on_record(const record& r) override {
    if (std::holds_alternative<kernel_launch>(r.body)) {
      std::unique_lock l(m);
      reached = true;
      cv.notify_all();
      cv.wait(l, [&] { return open; });
    }
    inner.on_record(r);
  }
  void wait_reached() {
    std::unique_lock l(m);
    cv.wait(l, [&] { return reached; });
  }
  void let_go() {
    std::lock_guard l(m);
    open = true;
    cv.notify_all();
  }
};

class ResolverDelivery : public ::testing::Test {
 protected:
  ResolverDelivery() : rec_(recorder_options{false, 0}) {
    resolver_.add_downstream(sink_);
    rec_.add_sink(resolver_);
  }
  // A launch awaited and a synchronize behind it, then another thread's
  // resolve delivering them, stopped in the sink at the launch.
  void deliver_on_another_thread() {
    const auto t = resolver_.await_next_launch();
    rec_.emit(kernel_launch{stream_id{1}, string_id{}, inferred});
    rec_.emit(device_synchronize{0});
    decoder_ = std::thread([this, t] { resolver_.resolve(t, measured); });
    sink_.wait_reached();
  }
  // Whether `f`, run on a thread of its own, ended within `limit`; the
  // sink is let go either way and everything joined.
  bool ends_while_delivery_is_stopped(const std::function<void()>& f,
                                      std::chrono::milliseconds limit) {
    auto run = std::async(std::launch::async, f);
    const bool ended = run.wait_for(limit) == std::future_status::ready;
    sink_.let_go();
    decoder_.join();
    run.get();
    return ended;
  }

  recorder rec_;
  footprint_resolver resolver_;
  gated_sink sink_;
  std::thread decoder_;
};

TEST_F(ResolverDelivery, ARecordBehindADeliveryInProgressIsLeftToIt) {
  deliver_on_another_thread();
  EXPECT_TRUE(ends_while_delivery_is_stopped([&] { rec_.emit(device_synchronize{0}); },
                                             std::chrono::seconds(10)));
  EXPECT_EQ(resolver_.held(), 0u);
  const auto& seqs = sink_.inner.seqs;
  EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end()));
  EXPECT_EQ(sink_.inner.launch_accesses, std::vector<std::vector<access>>{measured});
  // Thread start, launch and synchronize, then the other thread's start
  // and synchronize, delivered by the resolving thread after the launch.
  EXPECT_EQ(seqs.size(), 5u);
}

TEST_F(ResolverDelivery, ABacklogPastItsBoundWaitsForTheDeliverer) {
  deliver_on_another_thread();
  EXPECT_FALSE(ends_while_delivery_is_stopped(
      [&] {
        for (std::size_t i = 0; i <= footprint_resolver::max_backlog; ++i) {
          rec_.emit(device_synchronize{0});
        }
      },
      std::chrono::milliseconds(300)));
  EXPECT_EQ(resolver_.held(), 0u);
  EXPECT_EQ(sink_.inner.seqs.size(), footprint_resolver::max_backlog + 5);
  EXPECT_TRUE(std::is_sorted(sink_.inner.seqs.begin(), sink_.inner.seqs.end()));
}

TEST_F(ResolverDelivery, ReleaseAllReturnsOnlyWhenEverythingIsDelivered) {
  deliver_on_another_thread();
  resolver_.await_next_launch();  // awaited, never resolved
  rec_.emit(kernel_launch{stream_id{1}, string_id{}, inferred});
  EXPECT_FALSE(ends_while_delivery_is_stopped([&] { resolver_.release_all(); },
                                              std::chrono::milliseconds(300)));
  EXPECT_EQ(resolver_.held(), 0u);
  EXPECT_EQ(resolver_.awaiting(), 0u);
  EXPECT_EQ(sink_.inner.launch_accesses,
            (std::vector<std::vector<access>>{measured, inferred}));
}

// Nothing is lost when a delivery throws (out of memory downstream): the
// record that threw and those behind it are delivered next time.
struct throwing_once_sink : collecting_sink {
  bool thrown = false;
  void on_record(const record& r) override {
    if (!thrown && std::holds_alternative<device_synchronize>(r.body)) {
      thrown = true;
      throw std::runtime_error("no room (test)");
    }
    collecting_sink::on_record(r);
  }
};

TEST(ResolverDeliveryFailure, ARecordWhoseDeliveryThrewIsDeliveredNextTime) {
  recorder rec(recorder_options{false, 0});
  footprint_resolver resolver;
  throwing_once_sink sink;
  resolver.add_downstream(sink);
  rec.add_sink(resolver);
  const auto t = resolver.await_next_launch();
  rec.emit(kernel_launch{stream_id{1}, string_id{}, inferred});
  rec.emit(device_synchronize{0});
  rec.emit(device_synchronize{0});
  EXPECT_THROW(resolver.resolve(t, measured), std::runtime_error);
  EXPECT_EQ(resolver.held(), 2u);  // both synchronizes, in order
  resolver.release_all();
  EXPECT_EQ(resolver.held(), 0u);
  EXPECT_EQ(sink.seqs.size(), 4u);  // thread start, launch, two synchronizes
  EXPECT_TRUE(std::is_sorted(sink.seqs.begin(), sink.seqs.end()));
}

TEST(ResolverDeliveryFailure, ARecordPassingStraightThroughIsKeptWhenItsDeliveryThrows) {
  recorder rec(recorder_options{false, 0});
  footprint_resolver resolver;
  throwing_once_sink sink;
  resolver.add_downstream(sink);
  rec.add_sink(resolver);
  EXPECT_THROW(rec.emit(device_synchronize{0}), std::runtime_error);
  EXPECT_EQ(resolver.held(), 1u);
  rec.emit(device_synchronize{0});  // delivers both, in order
  EXPECT_EQ(resolver.held(), 0u);
  EXPECT_EQ(sink.seqs.size(), 3u);
  EXPECT_TRUE(std::is_sorted(sink.seqs.begin(), sink.seqs.end()));
}

}  // namespace
}  // namespace streamsan::precise
