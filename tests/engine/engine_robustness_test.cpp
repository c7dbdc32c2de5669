// Corrupt or adversarial logs: the engine must neither crash nor hang, and
// must keep counting what it could not use.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "sanitizer/engine/engine.h"

namespace streamsan {
namespace {

// A log of random records over small id ranges (so that ids collide and
// objects are used in every wrong order) plus a few far-out ids.
class random_log {
 public:
  explicit random_log(unsigned seed) : rng_(seed) {}

  record next(std::uint64_t seq) {
    record r;
    r.header = {seq, thread_id{pick(4)}, stack_id{pick(3)}};
    r.body = body();
    return r;
  }

 private:
  std::uint32_t pick(std::uint32_t n) {
    // Mostly small ids, sometimes none, sometimes far out.
    const auto roll = rng_() % 100;
    if (roll < 3) return 0;
    if (roll < 5) return 0xfffffff0u + static_cast<std::uint32_t>(rng_() % 16);
    return 1 + static_cast<std::uint32_t>(rng_() % n);
  }
  std::uint64_t offset() { return rng_() % 4 == 0 ? rng_() : rng_() % 4096; }
  access any_access() {
    return {{alloc_id{pick(12)}, offset(), offset()},
            static_cast<access_mode>(1 + rng_() % 3)};
  }
  std::span<const access> accesses() {
    auto& list = storage_.emplace_back();
    const auto n = rng_() % 4;
    for (unsigned i = 0; i < n; ++i) list.push_back(any_access());
    return list;
  }
  template <class E>
  E any_enum(int count) {
    return static_cast<E>(rng_() % static_cast<unsigned>(count));
  }

  record_body body() {
    const stream_id s{pick(6)};
    const event_id e{pick(5)};
    const alloc_id a{pick(12)};
    const graph_id g{pick(3)};
    switch (rng_() % 28) {
      case 0: return string_define{string_id{pick(8)}, "text"};
      case 1: return stream_create{s, static_cast<std::int32_t>(rng_() % 3) - 1,
                                   any_enum<stream_flavor>(4), 0};
      case 2: return stream_destroy{s};
      case 3: return stream_synchronize{s};
      case 4: return stream_query{s, rng_() % 2 == 0};
      case 5: return stream_wait_stream{s, stream_id{pick(6)}};
      case 6: return device_synchronize{static_cast<std::int32_t>(rng_() % 3) - 1};
      case 7: return event_create{e, 0};
      case 8: return event_destroy{e};
      case 9: return event_record{e, s};
      case 10: return event_wait{e, s};
      case 11: return event_synchronize{e};
      case 12: return event_query{e, rng_() % 2 == 0};
      case 13:
        return alloc_record{.alloc = a, .kind = any_enum<memory_kind>(6),
                            .device = static_cast<std::int32_t>(rng_() % 2), .size = offset(),
                            .stream = s, .parent = alloc_id{pick(12)},
                            .parent_offset = offset()};
      case 14: return free_record{a, any_enum<free_mode>(4), s};
      case 15: return memcpy_record{s, any_access().range, any_access().range,
                                    any_enum<memory_kind>(6), any_enum<memory_kind>(6),
                                    rng_() % 2 == 0};
      case 16: return memset_record{s, any_access().range, any_enum<memory_kind>(6),
                                    rng_() % 2 == 0};
      case 17:
      case 18: return kernel_launch{s, string_id{pick(8)}, accesses()};
      case 19: return host_func{s, string_id{}, accesses()};
      case 20: return host_access{accesses(), string_id{}};
      case 21: return graph_capture_begin{s, g};
      case 22: return graph_capture_end{s, g};
      case 23: {
        auto& nodes = nodes_.emplace_back();
        const auto n = rng_() % 5;
        for (unsigned i = 0; i < n; ++i) {
          nodes.push_back(graph_node{graph_node_kind::kernel, string_id{}, accesses()});
        }
        auto& edges = edges_.emplace_back();
        for (unsigned i = 0; i < n; ++i) {
          edges.push_back(graph_edge{static_cast<std::uint32_t>(rng_() % 7),
                                     static_cast<std::uint32_t>(rng_() % 7)});
        }
        return graph_instantiate{g, nodes, edges};
      }
      case 24: return graph_launch{g, s};
      case 25: return rng_() % 2 == 0 ? record_body{nvtx_push{string_id{pick(8)}}}
                                      : record_body{nvtx_pop{}};
      case 26: return thread_exit{};
      default: return unmodelled_call{string_id{pick(8)}};
    }
  }

  std::mt19937_64 rng_;
  std::vector<std::vector<access>> storage_;
  std::vector<std::vector<graph_node>> nodes_;
  std::vector<std::vector<graph_edge>> edges_;
};

TEST(EngineRobustness, RandomLogsAreProcessedToTheEnd) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    engine eng({.remembered_dead_objects = seed % 3 == 0 ? 0u : 4u});
    random_log log(seed);
    constexpr std::uint64_t n = 5000;
    for (std::uint64_t i = 1; i <= n; ++i) eng.on_record(log.next(i));
    ASSERT_EQ(eng.records_processed(), n) << "seed " << seed;
    const engine_statistics stats = eng.statistics();
    EXPECT_EQ(stats.records, n);
    for (const diagnostic& d : eng.diagnostics()) EXPECT_GE(d.count, 1u);
  }
}

TEST(EngineRobustness, HugeOffsetsDoNotWrapAround) {
  engine eng;
  const thread_id t{1};
  std::uint64_t seq = 0;
  const auto feed = [&](record_body b) { eng.on_record(record{{++seq, t, {}}, b}); };
  feed(stream_create{stream_id{1}, 0, stream_flavor::non_blocking, 0});
  feed(stream_create{stream_id{2}, 0, stream_flavor::non_blocking, 0});
  feed(alloc_record{.alloc = alloc_id{1}, .size = 64});
  const std::vector<access> at_end{{{alloc_id{1}, ~std::uint64_t{0} - 8, 64}, access_mode::write}};
  const std::vector<access> at_start{{{alloc_id{1}, 0, 64}, access_mode::write}};
  feed(kernel_launch{stream_id{1}, string_id{}, at_end});
  feed(kernel_launch{stream_id{2}, string_id{}, at_start});
  EXPECT_TRUE(eng.diagnostics().empty());  // a wrapped range would alias bytes 0..55
}

}  // namespace
}  // namespace streamsan
