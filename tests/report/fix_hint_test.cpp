#include "sanitizer/report/fix_hint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sanitizer/report/cause_text.h"
#include "sanitizer/report/describe.h"
#include "tests/report/report_fixture.h"

namespace streamsan {
namespace {

using ::testing::HasSubstr;

TEST(FixHint, StreamRaceInCudaTermsAndInTheRuntimes) {
  const auto tables = testing::report_tables();
  const auto d = testing::stream_race_diagnostic();
  EXPECT_EQ(fix_hint(d, tables, fix_vocabulary::cuda),
            "make stream#2 wait for fill: `cudaEventRecord(e, stream#1)` after it, "
            "`cudaStreamWaitEvent(stream#2, e)` before sum");
  EXPECT_EQ(fix_hint(d, tables, fix_vocabulary::runtime),
            "make stream#2 wait for fill: `stream#2.wait_stream(stream#1)` after fill, before sum");
}

// A fix names kernels as the report's header does: torch's templates
// elided, not spelled out twice at thousands of characters each.
TEST(FixHint, NamesLongKernelsByTheirShortNames) {
  auto tables = testing::report_tables();
  const std::string long_name =
      "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, "
      "float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >(int, "
      "at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<"
      "float> >, std::array<char*, 2ul>)";
  tables.define_string(string_id{100}, long_name);
  auto d = testing::stream_race_diagnostic();
  d.previous->name = string_id{100};
  const std::string hint = fix_hint(d, tables, fix_vocabulary::runtime);
  EXPECT_EQ(hint, "make stream#2 wait for " + short_kernel_name(long_name) +
                      ": `stream#2.wait_stream(stream#1)` after " + short_kernel_name(long_name) +
                      ", before sum");
  EXPECT_EQ(hint.find("MulFunctor"), std::string::npos);
}

TEST(FixHint, EveryKindHasOneLine) {
  const auto tables = testing::report_tables();
  for (const auto& d : testing::every_kind_diagnostics()) {
    for (const auto v : {fix_vocabulary::cuda, fix_vocabulary::runtime}) {
      const auto hint = fix_hint(d, tables, v);
      EXPECT_FALSE(hint.empty()) << to_string(d.kind);
      EXPECT_EQ(hint.find('\n'), std::string::npos) << hint;
    }
  }
}

// Note [Graph allocations]: the allocation is a graph's alloc node.
TEST(FixHint, GraphMemoryIsUsedAfterTheLaunchOrTheAllocNode) {
  const auto tables = testing::report_tables();
  diagnostic d;
  for (const auto& each : testing::every_kind_diagnostics()) {
    if (each.kind == diagnostic_kind::use_before_alloc) d = each;
  }
  ASSERT_EQ(d.kind, diagnostic_kind::use_before_alloc);
  d.previous->op = operation_kind::graph_node;
  d.previous->graph = graph_id{4};
  d.previous->graph_node = 0;
  EXPECT_THAT(fix_hint(d, tables, fix_vocabulary::cuda),
              HasSubstr("wait for the graph launch that allocates the memory: "
                        "`cudaEventRecord(e, stream#1)` after `cudaGraphLaunch`"));
  EXPECT_THAT(explanation(d).value_or(""), HasSubstr("after the graph's allocation node"));
  d.previous->stream = stream_id{};  // never launched
  EXPECT_THAT(fix_hint(d, tables, fix_vocabulary::cuda),
              HasSubstr("launch the graph that allocates the memory before"));
  d.current.op = operation_kind::graph_node;
  d.current.graph = graph_id{4};
  EXPECT_THAT(fix_hint(d, tables, fix_vocabulary::cuda),
              HasSubstr("depend on the graph's allocation node 0"));
}

TEST(FixHint, ACauseIsRepairedRatherThanWorkedAround) {
  const auto tables = testing::report_tables();
  auto d = testing::stream_race_diagnostic();
  ordering_cause c;
  c.kind = cause_kind::event_recorded_before_producer;
  c.event = event_id{3};
  c.named = stream_id{1};
  c.call.op = operation_kind::event_wait;
  c.call.stream = stream_id{2};
  d.cause = c;
  EXPECT_EQ(fix_hint(d, tables, fix_vocabulary::cuda),
            "record event#3 after fill: move `cudaEventRecord(event#3, stream#1)` after it");
  EXPECT_EQ(fix_hint(d, tables, fix_vocabulary::runtime),
            "record event#3 after fill: move `event#3.record(stream#1)` after it");
  EXPECT_EQ(cause_sentence(d, tables),
            "event#3 was recorded on stream#1 before kernel 'fill' was enqueued there, so "
            "stream#2's wait for it does not cover fill (S-EVENT-1)");

  d.cause->kind = cause_kind::unrecorded_event;
  d.cause->reported_as = 1;
  EXPECT_EQ(fix_hint(d, tables, fix_vocabulary::cuda),
            "record event#3 after fill: `cudaEventRecord(event#3, stream#1)` before the wait");
  EXPECT_EQ(cause_reference(d), "It was reported above as unrecorded-event on event#3.");
}

TEST(FixHint, HostSideCausesNameTheRightStream) {
  const auto tables = testing::report_tables();
  auto d = testing::every_kind_diagnostics()[1];  // host write vs kernel 'sum' on stream#2
  ordering_cause c;
  c.kind = cause_kind::synchronized_other_stream;
  c.named = stream_id{5};
  c.call.op = operation_kind::stream_synchronize;
  c.call.context = context_kind::host_thread;
  c.call.thread = thread_id{1};
  d.cause = c;
  EXPECT_EQ(fix_hint(d, tables, fix_vocabulary::cuda),
            "synchronize stream#2, where sum runs: `cudaStreamSynchronize(stream#2)`");
  EXPECT_EQ(cause_sentence(d, tables),
            "thread#1 synchronized stream#5, not stream#2, where kernel 'sum' runs");
  d.cause->kind = cause_kind::query_not_ready;
  d.cause->named = stream_id{2};
  d.cause->call.op = operation_kind::stream_query;
  EXPECT_THAT(fix_hint(d, tables, fix_vocabulary::runtime), HasSubstr("`stream#2.query()`"));
}

TEST(FixHint, ReusedCachedBlockAsksForRecordStream) {
  const auto tables = testing::report_tables();
  auto d = testing::stream_race_diagnostic();
  d.current.alloc = alloc_id{3};
  d.previous->alloc = alloc_id{7};  // an earlier block over the same bytes
  EXPECT_THAT(fix_hint(d, tables, fix_vocabulary::runtime), HasSubstr("record_stream(stream#1)"));
}

TEST(FixVocabulary, ParsesItsNames) {
  EXPECT_EQ(parse_fix_vocabulary("cuda"), fix_vocabulary::cuda);
  EXPECT_EQ(parse_fix_vocabulary("runtime"), fix_vocabulary::runtime);
  EXPECT_EQ(parse_fix_vocabulary("torch"), std::nullopt);
  EXPECT_EQ(to_string(fix_vocabulary::runtime), "runtime");
}

TEST(FixVocabulary, DetectsProgramsOnTheRuntime) {
  auto tables = testing::report_tables();
  symbolizer cuda_symbols(tables, symbol_source::log_only);
  const std::vector<diagnostic> plain{testing::stream_race_diagnostic()};
  EXPECT_EQ(detect_vocabulary(plain, cuda_symbols), fix_vocabulary::cuda);
  tables.define_symbol(0x9000, {"streamsan::rt::launch(streamsan::rt::stream_ref)", "", 0, "", 0});
  const std::array<std::uint64_t, 2> frames{0x9000, 0x2000};
  tables.define_stack(stack_id{50}, frames);
  auto d = testing::stream_race_diagnostic();
  d.previous->stack = stack_id{50};
  symbolizer runtime_symbols(tables, symbol_source::log_only);
  EXPECT_EQ(detect_vocabulary(std::vector<diagnostic>{d}, runtime_symbols), fix_vocabulary::runtime);
}

}  // namespace
}  // namespace streamsan
