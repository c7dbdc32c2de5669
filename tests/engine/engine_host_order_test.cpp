// Note [Host threads order what the log does not show]: a conflict whose
// earlier side some host thread had seen complete is counted, not reported;
// one that no host thread had seen stays reported.
#include <gtest/gtest.h>

#include "tests/engine/engine_driver.h"

namespace streamsan {
namespace engine_host_order_test {  // Note [Unity test programs in the sanitizer passes]
namespace {

using testing::engine_driver;
using testing::kind_list;
constexpr auto stream_race = diagnostic_kind::stream_race;
constexpr auto host_device_race = diagnostic_kind::host_device_race;

struct two_streams {
  engine_driver d;
  stream_id s1 = d.stream(stream_flavor::non_blocking);
  stream_id s2 = d.stream(stream_flavor::non_blocking);
  alloc_id x = d.alloc(256);
};

TEST(EngineHostOrder, WorkAnotherThreadSynchronizedIsCountedNotReported) {
  two_streams t;
  auto& d = t.d;
  d.launch(t.s1, {d.write(t.x)});
  d.sync(t.s1);
  d.on_other_thread([&] { d.launch(t.s2, {d.read(t.x)}); });
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_EQ(d.eng().statistics().host_ordered_conflicts, 1u);
}

TEST(EngineHostOrder, WorkNoThreadHadSeenCompleteStaysReported) {
  two_streams t;
  auto& d = t.d;
  d.launch(t.s1, {d.write(t.x)});
  d.on_other_thread([&] { d.launch(t.s2, {d.read(t.x)}); });
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.eng().statistics().host_ordered_conflicts, 0u);
}

TEST(EngineHostOrder, KnowledgeIsPerOperation) {
  // The thread saw the first write complete, not the second.
  two_streams t;
  auto& d = t.d;
  d.launch(t.s1, {d.write(t.x)});
  d.sync(t.s1);
  d.launch(t.s1, {d.write(t.x)});
  d.on_other_thread([&] { d.launch(t.s2, {d.read(t.x)}); });
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
}

TEST(EngineHostOrder, AnEndedThreadsKnowledgeStillCounts) {
  two_streams t;
  auto& d = t.d;
  d.launch(t.s1, {d.write(t.x)});
  d.on_thread_that_exits([&] { d.sync(t.s1); });  // a worker that was joined
  d.launch(t.s2, {d.read(t.x)});
  EXPECT_TRUE(d.diagnostics().empty());
  EXPECT_EQ(d.eng().statistics().host_ordered_conflicts, 1u);
}

TEST(EngineHostOrder, AHostAccessAgainstWorkAnotherThreadSawComplete) {
  engine_driver d;
  const auto s = d.stream(stream_flavor::non_blocking);
  const auto x = d.alloc(256, memory_kind::pinned_host);
  d.launch(s, {d.write(x)});
  const auto y = d.alloc(64, memory_kind::pinned_host);
  d.on_other_thread([&] { d.host({d.write(y)}); });  // sees nothing of s
  d.host({d.read(x)});
  EXPECT_EQ(d.kinds(), (kind_list{host_device_race}));
  d.on_other_thread([&] { d.sync(s); });
  d.on_other_thread([&] { d.host({d.read(x)}); });
  EXPECT_EQ(d.kinds(), (kind_list{host_device_race}));
  EXPECT_EQ(d.eng().statistics().host_ordered_conflicts, 1u);
}

TEST(EngineHostOrder, OneThreadIsUnchanged) {
  // What one thread has seen orders everything it issues later, so the rule
  // never hides a race of a single-threaded program.
  two_streams t;
  auto& d = t.d;
  d.launch(t.s1, {d.write(t.x)});
  d.query(t.s1, /*complete=*/false);
  d.launch(t.s2, {d.read(t.x)});
  EXPECT_EQ(d.kinds(), (kind_list{stream_race}));
  EXPECT_EQ(d.eng().statistics().host_ordered_conflicts, 0u);
}

}  // namespace
}  // namespace engine_host_order_test
}  // namespace streamsan
