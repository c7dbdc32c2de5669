// The engine announces every ordering decision to an order_observer
// (sanitizer/engine/order_observer.h), including the joins it skips as
// redundant (Note [Announcing every join]).
#include "sanitizer/engine/order_observer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/engine/engine_driver.h"

namespace streamsan::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string name(context_ref c) {
  return (c.kind == context_kind::stream ? "s" : "t") + std::to_string(c.id);
}

// Writes each announcement as one short line.
class transcript : public order_observer {
 public:
  std::vector<std::string> lines;

  void record_begins(const record_header&) override {}
  void record_ends() override {}
  void stream_created(context_ref s, std::int32_t device, stream_flavor, context_ref creator) override {
    lines.push_back("create " + name(s) + " dev" + std::to_string(device) + " from " + name(creator));
  }
  void stream_destroyed(context_ref s) override { lines.push_back("destroy " + name(s)); }
  void joined(context_ref dst, context_ref src) override {
    lines.push_back(name(dst) + " <- " + name(src));
  }
  void event_recorded(event_id e, context_ref src) override {
    lines.push_back("record e" + std::to_string(raw(e)) + " " + name(src));
  }
  void event_joined(context_ref dst, event_id e) override {
    lines.push_back(name(dst) + " <- e" + std::to_string(raw(e)));
  }
  void event_destroyed(event_id e) override { lines.push_back("destroy e" + std::to_string(raw(e))); }
  void host_function_enqueued(context_ref s, string_id, stack_id, std::uint64_t) override {
    lines.push_back("host function on " + name(s));
  }
  void accessed(const observed_access& a) override {
    lines.push_back(name(a.context) + (writes(a.mode) ? " writes " : " reads ") +
                    std::to_string(a.address) + "+" + std::to_string(a.size));
  }
};

class OrderObserver : public ::testing::Test {
 protected:
  OrderObserver() { d.eng().set_order_observer(&seen); }
  // The lines announced by `f` alone.
  template <class F>
  std::vector<std::string> during(F&& f) {
    seen.lines.clear();
    f();
    return seen.lines;
  }

  engine_driver d;
  transcript seen;
};

TEST_F(OrderObserver, StreamStartsFromItsCreator) {
  EXPECT_THAT(during([&] { d.stream(stream_flavor::non_blocking, 1); }),
              ElementsAre("create s1 dev1 from t1"));
}

TEST_F(OrderObserver, EveryLaunchJoinsTheIssuingThreadEvenWhenRedundant) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto a = d.alloc(64, memory_kind::pinned_host);
  d.launch(s, {d.write(a)});
  // The engine skips this join (the thread did nothing in between); the
  // observer still hears it, since the thread's real clock may have moved.
  EXPECT_THAT(during([&] { d.launch(s, {d.read(a, 8, 16)}); }),
              ElementsAre("s1 <- t1", "s1 reads 1048584+16"));
}

TEST_F(OrderObserver, LegacyStreamJoinsBlockingStreams) {
  const auto blocking = d.stream(stream_flavor::blocking);
  const auto legacy = d.legacy();
  EXPECT_THAT(during([&] { d.launch(legacy, {}); }), ElementsAre("s2 <- t1", "s2 <- s1"));
  EXPECT_THAT(during([&] { d.launch(blocking, {}); }), ElementsAre("s1 <- t1", "s1 <- s2"));
}

TEST_F(OrderObserver, EventsRecordedWaitedAndSynchronized) {
  const auto s1 = d.stream(stream_flavor::non_blocking);
  const auto s2 = d.stream(stream_flavor::non_blocking);
  const auto e = d.event();
  EXPECT_THAT(during([&] { d.record(e, s1); }), ElementsAre("s1 <- t1", "record e1 s1"));
  // A re-record of an unchanged stream keeps the engine's snapshot, but is
  // announced.
  EXPECT_THAT(during([&] { d.record(e, s1); }), ElementsAre("s1 <- t1", "record e1 s1"));
  EXPECT_THAT(during([&] { d.wait(e, s2); }), ElementsAre("s2 <- t1", "s2 <- e1"));
  EXPECT_THAT(during([&] { d.event_sync(e); }), ElementsAre("t1 <- e1"));
  EXPECT_THAT(during([&] { d.event_query(e, true); }), ElementsAre("t1 <- e1"));
  EXPECT_THAT(during([&] { d.event_query(e, false); }), IsEmpty());
  EXPECT_THAT(during([&] { d.destroy(e); }), ElementsAre("destroy e1"));
}

TEST_F(OrderObserver, UnrecordedEventsOrderNothing) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto e = d.event();
  EXPECT_THAT(during([&] { d.wait(e, s); }), ElementsAre("s1 <- t1"));
  EXPECT_THAT(during([&] { d.event_sync(e); }), IsEmpty());
}

TEST_F(OrderObserver, HostSynchronization) {
  const auto s1 = d.stream(stream_flavor::non_blocking);
  const auto s2 = d.stream(stream_flavor::non_blocking);
  EXPECT_THAT(during([&] { d.sync(s1); }), ElementsAre("t1 <- s1"));
  EXPECT_THAT(during([&] { d.query(s1, true); }), ElementsAre("t1 <- s1"));
  EXPECT_THAT(during([&] { d.query(s1, false); }), IsEmpty());
  EXPECT_THAT(during([&] { d.device_sync(); }), ElementsAre("t1 <- s1", "t1 <- s2"));
  EXPECT_THAT(during([&] { d.wait_stream(s2, s1); }),
              ElementsAre("s1 <- t1", "s2 <- t1", "s2 <- s1"));
}

TEST_F(OrderObserver, HostFunctionComesBeforeItsDeclaredAccesses) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto a = d.alloc(32, memory_kind::managed);
  EXPECT_THAT(during([&] { d.host_func(s, {d.read(a)}); }),
              ElementsAre("s1 <- t1", "host function on s1", "s1 reads 1048576+32"));
}

TEST_F(OrderObserver, HostAccessesAndCopies) {
  const auto s = d.legacy();
  const auto host = d.alloc(16, memory_kind::pinned_host);
  const auto dev = d.alloc(16, memory_kind::device);
  EXPECT_THAT(during([&] { d.host({d.write(host)}); }), ElementsAre("t1 writes 1048576+16"));
  // cudaMemcpy pinned -> device: a stream operation, then the host waits.
  EXPECT_THAT(during([&] {
                d.memcpy(s, d.whole(dev), memory_kind::device, d.whole(host),
                         memory_kind::pinned_host, false);
              }),
              ElementsAre("s1 <- t1", "s1 reads 1048576+16", "s1 writes 2097152+16",
                          "t1 <- s1"));
}

TEST_F(OrderObserver, DestroyedStreamAnnouncedOnce) {
  const auto s = d.stream();
  // Its clock then goes to the device's floor, which stands in for it
  // (S-STREAM-9: its work still completes and counts).
  EXPECT_THAT(during([&] { d.destroy(s); }), ElementsAre("destroy s1", "s0 <- s1"));
  EXPECT_THAT(during([&] { d.destroy(s); }), IsEmpty());
}

TEST_F(OrderObserver, CapturedWorkIsNotAnnounced) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto a = d.alloc(8, memory_kind::managed);
  const auto g = d.graph();
  d.capture_begin(s, g);
  EXPECT_THAT(during([&] { d.launch(s, {d.write(a)}); }), IsEmpty());
  d.capture_end(s, g);
  d.instantiate(g, {{"k", {d.write(a)}}}, {});
  EXPECT_THAT(during([&] { d.launch_graph(g, s); }),
              ElementsAre("s1 <- t1", "s1 writes 1048576+8"));
}

TEST_F(OrderObserver, FreedMemoryIsNotAnnounced) {
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto a = d.alloc(8, memory_kind::managed);
  d.free(a);
  EXPECT_THAT(during([&] { d.launch(s, {d.write(a)}); }), ElementsAre("s1 <- t1"));
}

TEST_F(OrderObserver, RecordBracketsEachRecord) {
  struct brackets final : transcript {
    void record_begins(const record_header& h) override {
      lines.push_back("begin " + std::to_string(h.seq));
    }
    void record_ends() override { lines.push_back("end"); }
  } b;
  d.eng().set_order_observer(&b);
  const auto s = d.stream(stream_flavor::non_blocking);
  b.lines.clear();
  d.sync(s);
  ASSERT_EQ(b.lines.size(), 3u);
  EXPECT_EQ(b.lines[1], "t1 <- s1");
  EXPECT_EQ(b.lines[2], "end");
  d.eng().set_order_observer(nullptr);
  b.lines.clear();
  d.sync(s);
  EXPECT_THAT(b.lines, IsEmpty());
}

}  // namespace
}  // namespace streamsan::testing
