// An owned_record survives the storage its source record pointed into.
#include "sanitizer/log/owned_record.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sanitizer/log/record_names.h"
#include "tests/log/sample_log.h"

namespace streamsan {
namespace {

TEST(OwnedRecord, CopiesEveryPayloadOfEveryKind) {
  const auto log = testing::sample_log();
  std::vector<owned_record> copies;
  for (const auto& r : log) copies.emplace_back(r);
  ASSERT_EQ(copies.size(), log.size());
  for (std::size_t i = 0; i < log.size(); ++i) {
    EXPECT_EQ(copies[i].get().header.seq, log[i].header.seq);
    EXPECT_EQ(copies[i].get().body.index(), log[i].body.index()) << record_kind_name(log[i].body);
  }
}

TEST(OwnedRecord, OutlivesTheSourceBuffers) {
  std::vector<access> accesses{access{{alloc_id{3}, 16, 64}, access_mode::write}};
  std::string text = "kernel text";
  std::vector<graph_node> nodes{graph_node{graph_node_kind::kernel, string_id{1}, accesses}};
  std::vector<graph_edge> edges{graph_edge{0, 0}};
  const owned_record launch(record{{7, thread_id{1}, stack_id{}},
                                   kernel_launch{stream_id{1}, string_id{2}, accesses}});
  const owned_record graph(record{{8, thread_id{1}, stack_id{}},
                                  graph_instantiate{graph_id{1}, nodes, edges}});
  const owned_record define(record{{9, thread_id{}, stack_id{}}, string_define{string_id{5}, text}});
  // Overwrite what the sources pointed to.
  accesses[0] = access{};
  nodes[0] = graph_node{};
  text.assign(text.size(), 'x');
  const auto& k = std::get<kernel_launch>(launch.get().body);
  ASSERT_EQ(k.accesses.size(), 1u);
  EXPECT_EQ(k.accesses[0].range.offset, 16u);
  const auto& g = std::get<graph_instantiate>(graph.get().body);
  ASSERT_EQ(g.nodes.size(), 1u);
  ASSERT_EQ(g.nodes[0].accesses.size(), 1u);
  EXPECT_NE(g.nodes[0].accesses.data(), accesses.data());
  EXPECT_EQ(g.nodes[0].accesses[0].range.size, 64u);
  EXPECT_EQ(std::get<string_define>(define.get().body).text, "kernel text");
}

TEST(OwnedRecord, ReplacesTheAccessesOfLaunchesOnly) {
  const std::vector<access> inferred{access{{alloc_id{1}, 0, 4096}, access_mode::read_write,
                                            access_origin::inferred}};
  const std::vector<access> measured{
      access{{alloc_id{1}, 64, 128}, access_mode::write, access_origin::measured}};
  owned_record launch(record{{1, thread_id{1}, stack_id{}},
                             kernel_launch{stream_id{1}, string_id{}, inferred}});
  EXPECT_TRUE(launch.replace_accesses(measured));
  const auto& k = std::get<kernel_launch>(launch.get().body);
  ASSERT_EQ(k.accesses.size(), 1u);
  EXPECT_EQ(k.accesses[0].origin, access_origin::measured);
  EXPECT_EQ(k.accesses[0].range.offset, 64u);
  owned_record sync(record{{2, thread_id{1}, stack_id{}}, device_synchronize{0}});
  EXPECT_FALSE(sync.replace_accesses(measured));
}

// Note [Replaced accesses reuse their list]
TEST(OwnedRecord, ReplacedAccessesTakeTheRecordsOwnList) {
  const std::vector<access> inferred{
      access{{alloc_id{1}, 0, 4096}, access_mode::read_write, access_origin::inferred},
      access{{alloc_id{2}, 0, 4096}, access_mode::read, access_origin::inferred}};
  const std::vector<access> measured{
      access{{alloc_id{1}, 64, 128}, access_mode::write, access_origin::measured},
      access{{alloc_id{2}, 0, 32}, access_mode::read, access_origin::measured}};
  owned_record launch(record{{1, thread_id{1}, stack_id{}},
                             kernel_launch{stream_id{1}, string_id{}, inferred}});
  const access* stored = std::get<kernel_launch>(launch.get().body).accesses.data();
  ASSERT_TRUE(launch.replace_accesses(measured));
  const auto& k = std::get<kernel_launch>(launch.get().body);
  EXPECT_EQ(k.accesses.data(), stored);  // the same list, no new one
  ASSERT_EQ(k.accesses.size(), 2u);
  EXPECT_EQ(k.accesses[0].range.offset, 64u);
  EXPECT_EQ(k.accesses[1].range.size, 32u);
  // Its own accesses, a tail of them: copied, not assigned onto themselves.
  ASSERT_TRUE(launch.replace_accesses(k.accesses.subspan(1)));
  const auto& again = std::get<kernel_launch>(launch.get().body);
  ASSERT_EQ(again.accesses.size(), 1u);
  EXPECT_EQ(again.accesses[0].range.alloc, alloc_id{2});
  EXPECT_EQ(again.accesses[0].range.size, 32u);
  // More than the list held: it grows.
  std::vector<access> more(5, measured[0]);
  ASSERT_TRUE(launch.replace_accesses(more));
  EXPECT_EQ(std::get<kernel_launch>(launch.get().body).accesses.size(), 5u);
}

// Note [A launch's accesses stay in the record]: its list moves with it.
TEST(OwnedRecord, ALaunchsAccessesSurviveTheRecordsMoves) {
  const std::vector<access> inferred{
      access{{alloc_id{3}, 8, 16}, access_mode::read, access_origin::inferred}};
  std::vector<owned_record> kept;
  for (std::uint64_t i = 1; i <= 9; ++i) {  // the vector grows: the records move
    kept.emplace_back(record{{i, thread_id{1}, stack_id{}},
                             kernel_launch{stream_id{1}, string_id{}, inferred}});
  }
  ASSERT_TRUE(kept[4].replace_accesses(inferred));
  owned_record moved = std::move(kept[4]);
  for (const auto* r : {&kept[0].get(), &kept[8].get(), &moved.get()}) {
    const auto& k = std::get<kernel_launch>(r->body);
    ASSERT_EQ(k.accesses.size(), 1u);
    EXPECT_EQ(k.accesses[0].range.alloc, alloc_id{3});
    EXPECT_EQ(k.accesses[0].range.size, 16u);
  }
}

}  // namespace
}  // namespace streamsan
