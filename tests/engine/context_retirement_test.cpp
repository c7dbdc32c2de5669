// Contexts that end (stream destroy, thread exit) and the reuse of their
// clock slots (Note [Retiring context slots]). Reuse must be invisible: a
// reused slot never hides a race nor invents one, and clocks stay as small
// as the contexts in use.
#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <string>
#include <vector>

#include "tests/engine/engine_driver.h"

namespace streamsan {
namespace {

using testing::engine_driver;
using testing::kind_list;
constexpr auto stream_race = diagnostic_kind::stream_race;
constexpr auto host_device_race = diagnostic_kind::host_device_race;

// Sweeps at every death: a slot is reused as early as the rules allow.
constexpr engine_options sweep_always{.context_sweep_batch = 1};

// A stream that ticks without touching memory, then dies: its slot is free
// after the next sweep.
void churn_one_stream(engine_driver& d) {
  const auto s = d.stream();
  d.launch(s, {});
  d.sync(s);
  d.destroy(s);
}

// ---- memory stays bounded ----

TEST(ContextRetirement, StreamChurnKeepsClocksBounded) {
  engine_driver d;
  std::vector<alloc_id> buffers;
  for (int i = 0; i < 8; ++i) buffers.push_back(d.alloc(1024));
  const auto cycle = [&](int i) {
    const auto s = d.stream(stream_flavor::non_blocking);
    d.launch(s, {d.read(buffers[(i + 1) % 8]), d.write(buffers[i % 8])});
    d.sync(s);
    d.destroy(s);
  };
  for (int i = 0; i < 500; ++i) cycle(i);
  const engine_statistics early = d.eng().statistics();
  for (int i = 500; i < 5000; ++i) cycle(i);
  const engine_statistics late = d.eng().statistics();
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_EQ(late.contexts, 1u);  // the main thread
  EXPECT_GE(late.retired_contexts, 4900u);
  EXPECT_LE(late.context_slots, 128u);
  EXPECT_LE(late.clock_bytes, early.clock_bytes);
}

TEST(ContextRetirement, ThreadChurnKeepsClocksBounded) {
  engine_driver d;
  const auto cycle = [&] {
    d.on_thread_that_exits([&] {
      const auto x = d.alloc(4096, memory_kind::pinned_host);
      const auto s = d.stream();
      d.host({d.write(x)});
      d.launch(s, {d.read(x), d.write(x, 0, 64)});
      d.sync(s);
      d.host({d.read(x)});
      d.free(x);
      d.destroy(s);
    });
  };
  for (int i = 0; i < 200; ++i) cycle();
  const engine_statistics early = d.eng().statistics();
  for (int i = 0; i < 1000; ++i) cycle();
  const engine_statistics late = d.eng().statistics();
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_EQ(late.contexts, 0u);  // every thread ended
  EXPECT_LE(late.context_slots, 160u);
  EXPECT_LE(late.clock_bytes, early.clock_bytes + early.clock_bytes / 10);
}

TEST(ContextRetirement, PerThreadDefaultStreamsEndWithTheirThread) {
  engine_driver d;
  for (int i = 0; i < 1000; ++i) {
    d.on_thread_that_exits([&] {
      const auto x = d.alloc(256);
      const auto s = d.stream(stream_flavor::per_thread_default);
      d.launch(s, {d.write(x)});
      d.sync(s);
      d.free(x);
    });
  }
  const engine_statistics stats = d.eng().statistics();
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_EQ(stats.contexts, 0u);
  EXPECT_LE(stats.context_slots, 160u);
}

TEST(ContextRetirement, AnEndedThreadsPerThreadStreamWorkStillCounts) {
  engine_driver d;
  const auto x = d.alloc(256, memory_kind::managed);
  d.on_thread_that_exits([&] {
    const auto s = d.stream(stream_flavor::per_thread_default);
    d.launch(s, {d.write(x)});  // still pending when the thread ends
  });
  d.host({d.read(x)});
  EXPECT_EQ(d.kinds(), (kind_list{host_device_race}));
  d.device_sync();  // S-SYNC-1: waits for it, through the floor
  d.host({d.write(x)});
  EXPECT_EQ(d.kinds(), (kind_list{host_device_race}));
}

// ---- a reused slot hides nothing ----

TEST(ContextRetirement, ASlotStillNamedByAHistoryIsNotReused) {
  engine_driver d(false, sweep_always);
  const auto x = d.alloc(256, memory_kind::managed);
  const auto old = d.stream();
  d.launch(old, {d.write(x)});
  d.destroy(old);  // never synchronized: x's history names it
  for (int i = 0; i < 8; ++i) churn_one_stream(d);
  const auto next = d.stream();  // takes the lowest free slot
  d.launch(next, {d.read(x)});
  d.on_other_thread([&] { d.host({d.read(x)}); });  // a new thread takes one too
  ASSERT_EQ(d.kinds(), (kind_list{stream_race, host_device_race}));
  EXPECT_EQ(d.diagnostics()[0].previous->stream, old);
  EXPECT_EQ(d.diagnostics()[0].current.stream, next);
  EXPECT_EQ(d.diagnostics()[1].previous->stream, old);
}

TEST(ContextRetirement, ASlotNamedOnlyByAnAtomicIsNotReused) {
  engine_driver d(false, sweep_always);
  const auto x = d.alloc(256);
  const auto old = d.stream();
  d.launch(old, {access{d.whole(x), access_mode::atomic}});
  d.destroy(old);
  for (int i = 0; i < 8; ++i) churn_one_stream(d);
  const auto next = d.stream();
  d.launch(next, {d.write(x)});  // a plain write races with the atomic
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.diagnostics()[0].previous->stream, old);
}

TEST(ContextRetirement, AStreamOrderedAllocationKeepsItsStreamsSlot) {
  engine_driver d(false, sweep_always);
  const auto maker = d.stream();
  const auto x = d.alloc_async(256, maker);
  d.destroy(maker);
  for (int i = 0; i < 8; ++i) churn_one_stream(d);
  const auto user = d.stream();
  d.on_other_thread([&] { d.launch(user, {d.write(x)}); });  // not ordered after the alloc
  EXPECT_EQ(d.kinds(), (kind_list{diagnostic_kind::use_before_alloc}));
}

// The new owner's epochs continue above the old owner's: a clock that
// learned the old owner's work does not cover the new owner's.
TEST(ContextRetirement, ANewOwnerContinuesTheSlotsEpochs) {
  engine_driver d(false, sweep_always);
  const auto y = d.alloc(256, memory_kind::managed);
  const auto a = d.stream(), b = d.stream();
  for (int i = 0; i < 5; ++i) {
    d.launch(a, {});
    d.launch(b, {});
  }
  d.sync(a);
  d.sync(b);  // main now covers five operations of each slot
  d.destroy(a);
  d.destroy(b);
  // The new thread takes a's slot, its stream b's.
  d.on_other_thread([&] {
    const auto s = d.stream();
    d.launch(s, {d.write(y)});
  });
  d.host({d.read(y)});
  EXPECT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_LE(d.eng().statistics().context_slots, 4u);  // the slots were reused
}

// ---- a reused slot invents nothing ----

TEST(ContextRetirement, AWaitOnASnapshotOfTheOldOwnerIsNotSkipped) {
  engine_driver d(false, sweep_always);
  const auto x = d.alloc(256);
  const auto p = d.stream();
  d.launch(p, {d.write(x)});
  const auto done = d.event();
  d.record(done, p);
  const auto old = d.stream();
  d.wait(done, old);
  const auto e = d.event();
  d.record(e, old);  // old's snapshot covers p's write
  d.destroy(old);    // it never ticked: its slot is free at once
  const auto n = d.stream();  // the slot's new owner
  const auto y = d.stream();
  const auto from_n = d.event();
  d.record(from_n, n);
  d.wait(from_n, y);  // y saw a newer version of the slot than e's
  d.wait(e, y);
  d.launch(y, {d.read(x)});
  EXPECT_TRUE(d.diagnostics().empty());
}

TEST(ContextRetirement, ReportsNameTheSlotsCurrentOwner) {
  engine_driver d(false, sweep_always);
  const auto x = d.alloc(256);
  churn_one_stream(d);  // its slot is free now
  const auto b = d.stream();
  d.launch(b, {d.write(x)});
  const auto c = d.stream();
  d.launch(c, {d.read(x)});
  ASSERT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.diagnostics()[0].previous->stream, b);
  EXPECT_EQ(d.diagnostics()[0].current.stream, c);
}

TEST(ContextRetirement, UseAfterFreeNamesTheFreeingStreamAfterItEnded) {
  engine_driver d(false, sweep_always);
  const auto s = d.stream();
  const auto x = d.alloc(256);
  d.free(x, free_mode::stream_ordered, s);
  d.destroy(s);
  for (int i = 0; i < 8; ++i) churn_one_stream(d);
  const auto other = d.stream();
  d.launch(other, {d.read(x)});
  ASSERT_EQ(d.kinds(), (kind_list{diagnostic_kind::use_after_free}));
  EXPECT_EQ(d.diagnostics()[0].previous->stream, s);
  EXPECT_EQ(d.diagnostics()[0].previous->context, context_kind::stream);
}

// ---- destroyed streams and ended threads ----

TEST(ContextRetirement, DestroyedStreamsAreJoinedThroughTheirFloor) {
  engine_driver d(false, sweep_always);
  const auto x = d.alloc(256), y = d.alloc(256, memory_kind::managed);
  const auto blocking = d.stream(stream_flavor::blocking);
  const auto other = d.stream(stream_flavor::non_blocking);
  d.launch(blocking, {d.write(x)});
  d.launch(other, {d.write(y)});
  d.destroy(blocking);
  d.destroy(other);
  for (int i = 0; i < 8; ++i) churn_one_stream(d);
  const auto legacy = d.legacy();
  d.launch(legacy, {d.read(x)});  // S-DEFAULT-1: after the blocking work
  d.launch(legacy, {d.read(y)});  // S-DEFAULT-2: not after the non-blocking work
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.diagnostics()[0].previous->stream, other);
  d.on_other_thread([&] {
    d.device_sync();  // S-SYNC-1: after every stream of the device, dead ones too
    d.host({d.write(x), d.write(y)});
  });
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
}

TEST(ContextRetirement, WorkOnADestroyedStreamIsReportedAndDoesNotRun) {
  engine_driver d;
  const auto x = d.alloc(256);
  const auto s = d.stream(), other = d.stream();
  d.destroy(s);
  d.launch(s, {d.write(x)});
  d.memset(s, d.whole(x), memory_kind::device, true);
  d.launch(other, {d.read(x)});
  EXPECT_EQ(d.kinds(), (kind_list{diagnostic_kind::destroyed_stream_use,
                                  diagnostic_kind::destroyed_stream_use}));
}

TEST(ContextRetirement, ExitOfAThreadNeverSeenIsIgnored) {
  engine eng;
  eng.on_record(record{{1, thread_id{7}, {}}, thread_exit{}});
  EXPECT_EQ(eng.statistics().ignored_records, 1u);
  EXPECT_EQ(eng.statistics().contexts, 0u);
}

TEST(ContextRetirement, ARecordAfterExitStartsANewThread) {
  engine eng;
  const auto feed = [&](std::uint64_t seq, record_body body) {
    eng.on_record(record{{seq, thread_id{1}, {}}, body});
  };
  feed(1, alloc_record{.alloc = alloc_id{1}, .kind = memory_kind::pinned_host, .size = 64});
  const std::vector<access> write{{{alloc_id{1}, 0, 64}, access_mode::write}};
  feed(2, host_access{write, {}});
  feed(3, thread_exit{});
  EXPECT_EQ(eng.statistics().contexts, 0u);
  feed(4, host_access{write, {}});  // the id came back: a new thread, unordered
  EXPECT_EQ(eng.statistics().contexts, 1u);
  EXPECT_EQ(eng.statistics().host_host_conflicts, 1u);
}

// ---- differential: reuse never changes a verdict ----

// A random but mostly well-formed program: threads and streams come and go,
// allocations are made and freed, work is launched and synchronized in
// every way the engine models.
class churn_log {
 public:
  explicit churn_log(unsigned seed) : rng_(seed) {}

  std::vector<record> make(std::size_t count) {
    std::vector<record> out;
    threads_.push_back(next_thread_++);
    while (out.size() < count) {
      const std::uint32_t thread = threads_[pick(threads_.size())];
      out.push_back(record{{out.size() + 1, thread_id{thread}, stack_id{static_cast<std::uint32_t>(1 + pick(3))}}, body(thread)});
    }
    return out;
  }

 private:
  std::size_t pick(std::size_t n) { return n == 0 ? 0 : rng_() % n; }
  bool chance(unsigned percent) { return rng_() % 100 < percent; }

  stream_id any_stream() {
    if (streams_.empty() || chance(4)) return stream_id{};  // the legacy stream
    if (chance(3)) return stream_id{next_stream_ - 1 - static_cast<std::uint32_t>(pick(8))};
    return streams_[pick(streams_.size())];
  }
  alloc_id any_alloc() {
    if (allocs_.empty() || chance(3)) return alloc_id{1 + static_cast<std::uint32_t>(pick(next_alloc_))};
    return allocs_[pick(allocs_.size())];
  }
  access any_access() {
    static constexpr access_mode modes[] = {access_mode::read, access_mode::read,
                                            access_mode::write, access_mode::read_write,
                                            access_mode::atomic};
    const std::uint64_t offset = 64 * pick(4);
    return {{any_alloc(), offset, 64 * (1 + pick(4))}, modes[pick(5)]};
  }
  std::span<const access> accesses() {
    auto& list = storage_.emplace_back();
    for (std::size_t i = pick(4); i > 0; --i) list.push_back(any_access());
    return list;
  }
  event_id any_event() {
    if (events_.empty()) {
      events_.push_back(event_id{next_event_++});
    }
    return events_[pick(events_.size())];
  }

  record_body body(std::uint32_t thread) {
    switch (pick(24)) {
      case 0:
        if (chance(50)) threads_.push_back(next_thread_++);
        return nvtx_mark{};
      case 1:
        if (threads_.size() > 1 || chance(10)) {
          std::erase(threads_, thread);
          if (threads_.empty()) threads_.push_back(next_thread_++);
          return thread_exit{};
        }
        return nvtx_mark{};
      case 2:
      case 3: {
        const stream_id s{next_stream_++};
        streams_.push_back(s);
        static constexpr stream_flavor flavors[] = {stream_flavor::blocking,
                                                    stream_flavor::non_blocking,
                                                    stream_flavor::per_thread_default};
        return stream_create{s, static_cast<std::int32_t>(pick(2)), flavors[pick(3)], 0};
      }
      case 4: {
        if (streams_.empty()) return nvtx_mark{};
        const auto i = pick(streams_.size());
        const stream_id s = streams_[i];
        streams_.erase(streams_.begin() + static_cast<std::ptrdiff_t>(i));
        return stream_destroy{s};
      }
      case 5: return stream_synchronize{any_stream()};
      case 6: return stream_query{any_stream(), chance(50)};
      case 7: return stream_wait_stream{any_stream(), any_stream()};
      case 8: return device_synchronize{static_cast<std::int32_t>(pick(2))};
      case 9: {
        const event_id e{next_event_++};
        events_.push_back(e);
        return event_create{e, 0};
      }
      case 10: return event_record{any_event(), any_stream()};
      case 11: return event_wait{any_event(), any_stream()};
      case 12: return event_synchronize{any_event()};
      case 13: {
        const alloc_id a{++next_alloc_};
        allocs_.push_back(a);
        static constexpr memory_kind kinds[] = {memory_kind::device, memory_kind::managed,
                                                memory_kind::pinned_host,
                                                memory_kind::stream_ordered,
                                                memory_kind::cached_block};
        const memory_kind kind = kinds[pick(5)];
        return alloc_record{.alloc = a, .kind = kind, .device = static_cast<std::int32_t>(pick(2)),
                            .size = 512, .stream = any_stream(), .parent = any_alloc(),
                            .parent_offset = 64 * pick(4)};
      }
      case 14: {
        if (allocs_.empty()) return nvtx_mark{};
        const auto i = pick(allocs_.size());
        const alloc_id a = allocs_[i];
        allocs_.erase(allocs_.begin() + static_cast<std::ptrdiff_t>(i));
        return free_record{a, static_cast<free_mode>(pick(4)), any_stream()};
      }
      case 15: return memcpy_record{any_stream(), any_access().range, any_access().range,
                                    static_cast<memory_kind>(pick(4)),
                                    static_cast<memory_kind>(pick(4)), chance(50)};
      case 16: return memset_record{any_stream(), any_access().range,
                                    static_cast<memory_kind>(pick(4)), chance(50)};
      case 17: return host_func{any_stream(), string_id{}, accesses()};
      case 18:
      case 19: return host_access{accesses(), string_id{}};
      case 20: return event_query{any_event(), chance(50)};
      default: return kernel_launch{any_stream(), string_id{}, accesses()};
    }
  }

  std::mt19937 rng_;
  std::vector<std::uint32_t> threads_;
  std::vector<stream_id> streams_;
  std::vector<alloc_id> allocs_;
  std::vector<event_id> events_;
  std::uint32_t next_thread_ = 1;
  std::uint32_t next_stream_ = 1;
  std::uint32_t next_alloc_ = 0;
  std::uint32_t next_event_ = 1;
  std::deque<std::vector<access>> storage_;
};

std::string describe(const operation_ref& o) {
  return std::to_string(o.seq) + "/" + std::string(to_string(o.op)) + "/" +
         std::to_string(static_cast<int>(o.context)) + "/s" + std::to_string(raw(o.stream)) +
         "/t" + std::to_string(raw(o.thread)) + "/" + std::to_string(o.offset) + "+" +
         std::to_string(o.size) + "/a" + std::to_string(raw(o.alloc));
}

std::vector<std::string> verdicts(const engine& eng) {
  std::vector<std::string> out;
  for (const diagnostic& d : eng.diagnostics()) {
    std::string line = std::string(to_string(d.kind)) + " " + std::string(to_string(d.hazard_kind)) +
                       " cur=" + describe(d.current);
    if (d.previous) line += " prev=" + describe(*d.previous);
    if (d.allocation) line += " alloc=" + std::to_string(raw(d.allocation->id));
    line += " bytes=" + std::to_string(d.overlap_offset) + "+" + std::to_string(d.overlap_size) +
            " e" + std::to_string(raw(d.event)) + " s" + std::to_string(raw(d.stream)) + " x" +
            std::to_string(d.count) + " " + std::string(to_string(d.certainty));
    // What explains it: its cause (near misses are kept per slot) and its
    // timeline (the window's lanes are slots).
    if (d.cause) {
      line += " cause=" + std::string(to_string(d.cause->kind)) + "/" + describe(d.cause->call) +
              "/s" + std::to_string(raw(d.cause->named));
      if (d.cause->record) line += "/rec=" + describe(*d.cause->record);
    }
    if (d.timeline) {
      line += " timeline=" + std::to_string(d.timeline->previous) + ">" +
              std::to_string(d.timeline->current) + ":";
      for (const timeline_op& o : d.timeline->ops) line += std::to_string(o.seq) + ",";
      for (const timeline_edge& e : d.timeline->edges) {
        line += std::to_string(e.from) + "-" + std::string(to_string(e.kind)) + "-" +
                std::to_string(e.to) + ",";
      }
    }
    out.push_back(line);
  }
  return out;
}

TEST(ContextRetirement, ReusingSlotsNeverChangesAVerdict) {
  std::uint64_t retired = 0, diagnostics = 0;
  for (unsigned seed = 1; seed <= 40; ++seed) {
    churn_log generator(seed);  // owns what the records' spans point into
    const std::vector<record> log = generator.make(3000);
    engine reusing(engine_options{.context_sweep_batch = 1, .timeline_window = 64});
    engine keeping(engine_options{.context_sweep_batch = 0, .timeline_window = 64});
    for (const record& r : log) {
      reusing.on_record(r);
      keeping.on_record(r);
    }
    const auto reused = verdicts(reusing), kept = verdicts(keeping);
    ASSERT_EQ(reused.size(), kept.size()) << "seed " << seed;
    for (std::size_t i = 0; i < reused.size(); ++i) {
      ASSERT_EQ(reused[i], kept[i]) << "seed " << seed << ", diagnostic " << i;
    }
    const engine_statistics stats = reusing.statistics();
    retired += stats.retired_contexts;
    diagnostics += reusing.diagnostics().size();
    EXPECT_LE(stats.context_slots, keeping.statistics().context_slots) << "seed " << seed;
    EXPECT_EQ(keeping.statistics().retired_contexts, 0u);
  }
  // The logs did exercise reuse, and races.
  EXPECT_GT(retired, 1000u);
  EXPECT_GT(diagnostics, 100u);
}

}  // namespace
}  // namespace streamsan
