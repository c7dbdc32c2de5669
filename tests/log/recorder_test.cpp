#include "sanitizer/log/recorder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "sanitizer/log/log_tables.h"

namespace streamsan {
namespace {

struct collecting_sink : record_sink {
  std::vector<record_header> headers;
  std::vector<std::size_t> kinds;
  log_tables tables;
  void on_record(const record& r) override {
    headers.push_back(r.header);
    kinds.push_back(r.body.index());
    tables.absorb(r.body);
  }
};

TEST(Recorder, SequenceNumbersStrictlyIncrease) {
  recorder rec({.capture_stacks = false});
  collecting_sink sink;
  rec.add_sink(sink);
  for (int i = 0; i < 5; ++i) rec.emit(stream_synchronize{stream_id{1}});
  ASSERT_FALSE(sink.headers.empty());
  for (std::size_t i = 1; i < sink.headers.size(); ++i) {
    EXPECT_LT(sink.headers[i - 1].seq, sink.headers[i].seq);
  }
}

TEST(Recorder, StringDefinitionPrecedesItsFirstUse) {
  recorder rec({.capture_stacks = false});
  collecting_sink sink;
  rec.add_sink(sink);
  const auto name = rec.intern("fill_kernel");
  EXPECT_EQ(rec.intern("fill_kernel"), name);
  EXPECT_EQ(sink.tables.string(name), "fill_kernel");
  EXPECT_EQ(rec.intern(""), string_id{});
}

TEST(Recorder, IdenticalStacksAreInternedOnce) {
  recorder rec({.capture_stacks = true, .stack_depth = 8});
  collecting_sink sink;
  rec.add_sink(sink);
  std::vector<stack_id> stacks;
  for (int i = 0; i < 3; ++i) {
    rec.emit(device_synchronize{0});
    stacks.push_back(sink.headers.back().stack);
  }
  EXPECT_NE(stacks[0], stack_id{});
  EXPECT_EQ(stacks[0], stacks[1]);
  EXPECT_EQ(stacks[1], stacks[2]);
  EXPECT_FALSE(sink.tables.stack(stacks[0]).empty());
}

// Note [The last stack again]: the last stack answers first, and only for
// the same frames.
TEST(Recorder, StacksAlternatingWithOthersKeepTheirIds) {
  recorder rec({.capture_stacks = true, .stack_depth = 8});
  collecting_sink sink;
  rec.add_sink(sink);
  const std::vector<std::uint64_t> a{0x1000, 0x2000, 0x3000};
  const std::vector<std::uint64_t> b{0x1000, 0x2000};  // a prefix of a
  const std::vector<std::uint64_t> c{0x1000, 0x2000, 0x3001};
  const auto ia = rec.intern_stack(a);
  EXPECT_EQ(rec.intern_stack(a), ia);
  const auto ib = rec.intern_stack(b);
  const auto ic = rec.intern_stack(c);
  EXPECT_NE(ib, ia);
  EXPECT_NE(ic, ia);
  EXPECT_NE(ic, ib);
  EXPECT_EQ(rec.intern_stack(a), ia);
  EXPECT_EQ(rec.intern_stack(c), ic);
  EXPECT_EQ(rec.intern_stack(b), ib);
  EXPECT_EQ(rec.intern_stack(b), ib);
  rec.emit_with_stack(device_synchronize{0}, c);
  EXPECT_EQ(sink.headers.back().stack, ic);
  EXPECT_EQ(std::count(sink.kinds.begin(), sink.kinds.end(),
                       record_body(stack_define{}).index()),
            3);  // each defined once
  EXPECT_EQ(sink.tables.stack(ib).size(), 2u);
}

TEST(Recorder, EachHostThreadGetsItsOwnId) {
  recorder rec({.capture_stacks = false});
  collecting_sink sink;
  rec.add_sink(sink);
  const auto main_id = rec.current_thread();
  thread_id other{};
  std::thread([&] { other = rec.current_thread(); }).join();
  EXPECT_NE(main_id, other);
  EXPECT_EQ(rec.current_thread(), main_id);
}

TEST(Recorder, NamingANewThreadEmitsOneThreadStart) {
  recorder rec({.capture_stacks = false});
  collecting_sink sink;
  rec.add_sink(sink);
  std::thread([&] { rec.name_current_thread("worker"); }).join();
  const auto thread_starts = std::count(sink.kinds.begin(), sink.kinds.end(),
                                        record_body(thread_start{}).index());
  EXPECT_EQ(thread_starts, 1);
}

TEST(Recorder, AnEndingThreadLogsThreadExitAsItsLastRecord) {
  recorder rec({.capture_stacks = false});
  collecting_sink sink;
  rec.add_sink(sink);
  thread_id worker{};
  std::thread([&] {
    rec.emit(device_synchronize{0});
    worker = rec.current_thread();
    rec.thread_exited();
  }).join();
  ASSERT_FALSE(sink.kinds.empty());
  EXPECT_EQ(sink.kinds.back(), record_body(thread_exit{}).index());
  EXPECT_EQ(sink.headers.back().thread, worker);
}

// Note [A thread hook with the thread's id]: a hook runs at a thread's first
// record until it succeeds, again for the thread's next id (after its
// thread_exit), and again after another hook's record.
struct counting_hook {
  int runs = 0;
  bool succeed = true;
  recorder::thread_hook hook() {
    return {[](const void* self) {
              auto& h = *static_cast<counting_hook*>(const_cast<void*>(self));
              ++h.runs;
              return h.succeed;
            },
            this};
  }
};

TEST(Recorder, AThreadHookRunsOnceForEachIdOfTheThread) {
  recorder rec({.capture_stacks = false});
  counting_hook first, other;
  first.succeed = false;
  rec.emit_with_stack(device_synchronize{0}, {}, first.hook());
  rec.emit_with_stack(device_synchronize{0}, {}, first.hook());
  EXPECT_EQ(first.runs, 2);  // asked again while it fails
  first.succeed = true;
  for (int i = 0; i < 3; ++i) rec.emit_with_stack(device_synchronize{0}, {}, first.hook());
  EXPECT_EQ(first.runs, 3);
  rec.emit_with_stack(device_synchronize{0}, {});  // no hook: changes nothing
  rec.emit_with_stack(device_synchronize{0}, {}, first.hook());
  EXPECT_EQ(first.runs, 3);
  rec.emit_with_stack(device_synchronize{0}, {}, other.hook());
  rec.emit_with_stack(device_synchronize{0}, {}, first.hook());
  EXPECT_EQ(other.runs, 1);
  EXPECT_EQ(first.runs, 4);
  rec.thread_exited();
  rec.emit_with_stack(device_synchronize{0}, {}, first.hook());  // a new id
  EXPECT_EQ(first.runs, 5);
  std::thread([&] { rec.emit_with_stack(device_synchronize{0}, {}, first.hook()); }).join();
  EXPECT_EQ(first.runs, 6);
}

TEST(Recorder, AThreadThatNeverRecordedLogsNoExit) {
  recorder rec({.capture_stacks = false});
  collecting_sink sink;
  rec.add_sink(sink);
  std::thread([&] { rec.thread_exited(); }).join();
  EXPECT_TRUE(sink.kinds.empty());
}

TEST(Recorder, RecordingAfterThreadExitStartsANewThread) {
  recorder rec({.capture_stacks = false});
  collecting_sink sink;
  rec.add_sink(sink);
  const auto before = rec.current_thread();
  rec.thread_exited();
  const auto after = rec.current_thread();
  EXPECT_NE(before, after);
  EXPECT_EQ(sink.kinds.back(), record_body(thread_start{}).index());
  EXPECT_EQ(sink.headers.back().thread, after);
}

TEST(Recorder, LateSinkLearnsOnlyThreadsStillRunning) {
  recorder rec({.capture_stacks = false});
  std::thread([&] {
    rec.emit(device_synchronize{0});
    rec.thread_exited();
  }).join();
  const auto main_id = rec.current_thread();
  collecting_sink late;
  rec.add_sink(late);
  ASSERT_EQ(late.headers.size(), 1u);
  EXPECT_EQ(late.kinds[0], record_body(thread_start{}).index());
  EXPECT_EQ(late.headers[0].thread, main_id);
}

TEST(Recorder, LateSinkReceivesEarlierDefinitions) {
  recorder rec({.capture_stacks = false});
  const auto name = rec.intern("axpy");
  collecting_sink late;
  rec.add_sink(late);
  EXPECT_EQ(late.tables.string(name), "axpy");
}

TEST(Recorder, IdsNeverRepeat) {
  recorder rec;
  const auto a = rec.new_stream_id();
  const auto b = rec.new_stream_id();
  EXPECT_NE(a, b);
  EXPECT_NE(a, stream_id{});
}

}  // namespace
}  // namespace streamsan
