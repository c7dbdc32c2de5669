// Note [Operators narrow kernel footprints]: kernels launched inside a
// framework operator take the operator's tensor spans; words in no span
// keep their inferred footprint; launches of an operator with new outputs
// wait for op_ended(); a span flagged as a hull is inferred, and a
// measurement of the launch replaces it (Note [Measured footprints of an
// operator's launches]).
#include <gtest/gtest.h>

#include <vector>

#include "inject/capture/call_sites.h"
#include "inject/model/cuda_model.h"
#include "inject/precise/footprint_resolver.h"
#include "inject/session/torch_spans.h"
#include "tests/inject/capture_sink.h"
#include "tests/inject/fake_driver.h"

namespace streamsan::injection {
namespace {

constexpr std::uintptr_t stream_a = 0x5000;
constexpr std::uintptr_t kernel = 0xabc;
constexpr std::uint64_t segment = 0x700000000000;  // one caching-allocator segment
constexpr std::uint64_t workspace = 0x700000400000;

class OperatorFootprint : public ::testing::Test {
 protected:
  recorder rec{{.capture_stacks = false, .stack_depth = 0}};
  fake_driver driver;
  capture_sink sink;
  precise::footprint_resolver resolver;
  cuda_model model{rec, driver};
  call_site here{};

  void SetUp() override {
    resolver.add_downstream(sink);
    rec.add_sink(resolver);
    model.set_footprint_resolver(&resolver);
    // k(two_buffers {float* a; float* b;}, int n)
    driver.kernels[kernel] = kernel_description{"_Z1k11two_buffersi", {{0, 16}, {16, 4}}, true};
    model.allocated(here, segment, 2 << 20, memory_kind::device);
    model.allocated(here, workspace, 1 << 20, memory_kind::device);
  }
  void launch(std::uint64_t a, std::uint64_t b, std::uint64_t measured_id = 0) {
    struct {
      std::uint64_t a, b;
    } pair{a, b};
    int n = 0;
    void* params[] = {&pair, &n};
    if (measured_id != 0) model.expect_measured_launch(measured_id);
    model.kernel_launched(here, {stream_a}, kernel, kernel_arguments::from_pointers(params));
  }
  std::vector<access> last_launch() const { return sink.last<kernel_launch>().accesses; }
  // `a` is the bytes [offset, offset + size) of its allocation, so accessed.
  static void expect_access(const access& a, std::uint64_t offset, std::uint64_t size,
                            access_mode mode, access_origin origin) {
    EXPECT_EQ(a.range.offset, offset);
    EXPECT_EQ(a.range.size, size);
    EXPECT_EQ(a.mode, mode);
    EXPECT_EQ(a.origin, origin);
  }
  // A measurement of the bytes [begin, end) of the segment, written.
  static precise::decoded_footprint written(std::vector<std::pair<std::uint64_t, std::uint64_t>> runs,
                                            bool complete = true) {
    precise::decoded_footprint d;
    for (const auto& [begin, end] : runs) {
      d.intervals.push_back({segment + begin, segment + end, precise::footprint_kind::write});
    }
    d.complete = complete;
    return d;
  }
};

// Note [A span flagged as a hull]: the mode word's span_hull makes the
// span's accesses inferred; the mode is read from the low bits.
TEST_F(OperatorFootprint, AFlaggedHullIsInferredAndAnUnflaggedSpanExact) {
  const annotated_range in[] = {torch_span(segment + 4096, 1024, 1),
                                torch_span(segment + 65536, 4096, 2 | span_hull)};
  EXPECT_EQ(in[1].mode, access_mode::write);
  model.op_began(in, op_outputs::none);
  launch(segment + 4096, segment + 65536);
  model.op_ended({});
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 2u);
  expect_access(accesses[0], 4096, 1024, access_mode::read, access_origin::exact);
  expect_access(accesses[1], 65536, 4096, access_mode::write, access_origin::inferred);
}

// Note [Measured footprints of an operator's launches]: a measured launch
// with a hull waits for its measurement, which replaces the hull by the
// bytes measured inside it; the exact span stays.
TEST_F(OperatorFootprint, AMeasurementReplacesAHullAndKeepsTheExactSpans) {
  const annotated_range in[] = {torch_span(segment + 4096, 1024, 1),
                                torch_span(segment + 65536, 4096, 2 | span_hull)};
  model.op_began(in, op_outputs::none);
  launch(segment + 4096, segment + 65536, 7);
  model.op_ended({});
  EXPECT_TRUE(sink.all<kernel_launch>().empty());  // waits for its measurement
  // Two rows' columns inside the hull, and the exact input's bytes.
  model.measured_launch_done(7, written({{65536, 65536 + 256}, {65536 + 2048, 65536 + 2304},
                                         {4096, 4096 + 64}}));
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 3u);
  // The exact span as it was, and the hull as measured.
  expect_access(accesses[0], 4096, 1024, access_mode::read, access_origin::exact);
  expect_access(accesses[1], 65536, 256, access_mode::write, access_origin::measured);
  expect_access(accesses[2], 65536 + 2048, 256, access_mode::write, access_origin::measured);
}

TEST_F(OperatorFootprint, AnIncompleteMeasurementKeepsTheHullInferred) {
  const annotated_range in[] = {torch_span(segment + 65536, 4096, 3 | span_hull)};
  model.op_began(in, op_outputs::none);
  launch(segment + 65536, segment + 65536, 2);
  model.op_ended({});
  model.measured_launch_done(2, written({{65536, 65536 + 256}}, false));
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 1u);
  expect_access(accesses[0], 65536, 4096, access_mode::read_write, access_origin::inferred);
}

// Exact spans are the schema's promise: the launch does not wait.
TEST_F(OperatorFootprint, AnExactLaunchDoesNotWaitForItsMeasurement) {
  const annotated_range in[] = {torch_span(segment + 4096, 1024, 3)};
  model.op_began(in, op_outputs::none);
  launch(segment + 4096, segment + 4096, 4);
  ASSERT_EQ(sink.all<kernel_launch>().size(), 1u);
  model.op_ended({});
  model.measured_launch_done(4, written({{4096, 4096 + 8}}));
  ASSERT_EQ(sink.all<kernel_launch>().size(), 1u);
  ASSERT_EQ(last_launch().size(), 1u);
  expect_access(last_launch()[0], 4096, 1024, access_mode::read_write, access_origin::exact);
}

// A launch held for the operator's outputs and measured: whichever of the
// two comes last resolves it, with the outputs and the measured hull.
TEST_F(OperatorFootprint, AHeldLaunchTakesItsOutputsAndItsMeasurementInEitherOrder) {
  for (const bool measurement_first : {true, false}) {
    SCOPED_TRACE(measurement_first ? "measurement first" : "outputs first");
    const std::size_t before = sink.all<kernel_launch>().size();
    const annotated_range in[] = {torch_span(segment + 65536, 4096, 1 | span_hull)};
    model.op_began(in, op_outputs::named_at_end);
    launch(segment + 65536, segment + 8192, 9);
    const annotated_range out[] = {torch_span(segment + 8192, 512, 2)};
    if (measurement_first) {
      model.measured_launch_done(9, written({{65536, 65536 + 128}, {8192, 8192 + 512}}));
      EXPECT_EQ(sink.all<kernel_launch>().size(), before);  // the outputs are not named yet
      model.op_ended(out);
    } else {
      model.op_ended(out);
      EXPECT_EQ(sink.all<kernel_launch>().size(), before);  // the measurement is not back
      model.measured_launch_done(9, written({{65536, 65536 + 128}, {8192, 8192 + 512}}));
    }
    ASSERT_EQ(sink.all<kernel_launch>().size(), before + 1);
    const auto accesses = last_launch();
    ASSERT_EQ(accesses.size(), 2u);
    // The output exact, the hull as measured.
    expect_access(accesses[0], 8192, 512, access_mode::write, access_origin::exact);
    expect_access(accesses[1], 65536, 128, access_mode::write, access_origin::measured);
  }
}

// Held, measured, and all exact once the outputs are named: delivered at
// op_ended(), and the measurement that comes back later changes nothing.
TEST_F(OperatorFootprint, AHeldLaunchExactOnceSettledDoesNotWaitForItsMeasurement) {
  const annotated_range in[] = {torch_span(segment, 256, 1)};
  model.op_began(in, op_outputs::named_at_end);
  launch(segment, segment + 8192, 5);
  const annotated_range out[] = {torch_span(segment + 8192, 512, 2)};
  model.op_ended(out);
  ASSERT_EQ(sink.all<kernel_launch>().size(), 1u);
  model.measured_launch_done(5, written({{8192, 8192 + 4}}));
  ASSERT_EQ(sink.all<kernel_launch>().size(), 1u);
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 2u);
  expect_access(accesses[1], 8192, 512, access_mode::write, access_origin::exact);
  EXPECT_EQ(resolver.awaiting(), 0u);
}

TEST_F(OperatorFootprint, AnInPlaceOperatorsKernelTakesItsTensorsExactly) {
  const annotated_range in[] = {{segment + 4096, 1024, access_mode::read_write},
                                {segment + 65536, 1024, access_mode::read}};
  model.op_began(in, op_outputs::none);
  launch(segment + 4096, segment + 65536);
  model.op_ended({});
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 2u);  // two spans of one segment, not folded
  EXPECT_EQ(accesses[0].range.offset, 4096u);
  EXPECT_EQ(accesses[0].range.size, 1024u);
  EXPECT_EQ(accesses[0].mode, access_mode::read_write);
  EXPECT_EQ(accesses[0].origin, access_origin::exact);
  EXPECT_EQ(accesses[1].range.offset, 65536u);
  EXPECT_EQ(accesses[1].mode, access_mode::read);
}

TEST_F(OperatorFootprint, NewOutputsAreWaitedForAndWorkspacesStayInferred) {
  const annotated_range in[] = {{segment, 256, access_mode::read}};
  model.op_began(in, op_outputs::named_at_end);
  launch(segment, workspace + 512);  // reads the input, writes the output... or a workspace
  EXPECT_TRUE(sink.all<kernel_launch>().empty());  // held until the outputs are known
  model.stream_synchronized(here, {stream_a});
  EXPECT_TRUE(sink.all<stream_synchronize>().empty());  // behind it, in order
  const annotated_range out[] = {{segment + 8192, 512, access_mode::write}};
  model.op_ended(out);
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 3u);
  EXPECT_EQ(accesses[0].range.offset, 0u);
  EXPECT_EQ(accesses[0].origin, access_origin::exact);
  EXPECT_EQ(accesses[1].range.offset, 8192u);
  EXPECT_EQ(accesses[1].mode, access_mode::write);
  // The word in no tensor span keeps "to the end of its allocation".
  EXPECT_EQ(accesses[2].range.offset, 512u);
  EXPECT_EQ(accesses[2].range.size, (1u << 20) - 512u);
  EXPECT_EQ(accesses[2].origin, access_origin::inferred);
  EXPECT_EQ(sink.all<stream_synchronize>().size(), 1u);
}

// Note [An operator's outputs are its blocks]: the blocks the caching
// allocator hands out inside the operator are its outputs, exact and
// written, known before its kernels launch: nothing is held for op_ended().
TEST_F(OperatorFootprint, AnOperatorsBlocksAreItsOutputsAtOnce) {
  const annotated_range in[] = {{segment, 256, access_mode::read}};
  model.op_began(in, op_outputs::blocks);
  model.block_allocated(here, segment + 8192, 512, 0, {stream_a});
  const alloc_id output = sink.all<alloc_record>().back().alloc;
  launch(segment, segment + 8192);
  ASSERT_EQ(sink.all<kernel_launch>().size(), 1u);  // not held
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 2u);
  expect_access(accesses[0], 0, 256, access_mode::read, access_origin::exact);
  EXPECT_EQ(accesses[1].range.alloc, output);
  expect_access(accesses[1], 0, 512, access_mode::write, access_origin::exact);
  model.op_ended({});
  EXPECT_EQ(sink.all<kernel_launch>().size(), 1u);
  EXPECT_EQ(resolver.awaiting(), 0u);
  // After the operator, a block is no operator's output.
  model.block_allocated(here, segment + 16384, 512, 0, {stream_a});
  model.op_began(in, op_outputs::blocks);
  launch(segment, segment + 16384);
  model.op_ended({});
  const auto later = last_launch();
  ASSERT_EQ(later.size(), 2u);
  EXPECT_EQ(later[1].origin, access_origin::inferred);  // a word in no span
}

// A temporary (a block the operator frees before it returns) is an exact
// write of the launches before its free, and of none after it; an inner
// operator's blocks are the outer's too.
TEST_F(OperatorFootprint, ATemporaryBlockIsAnOutputUntilFreed) {
  const annotated_range in[] = {{segment, 256, access_mode::read}};
  model.op_began(in, op_outputs::blocks);
  model.op_began({}, op_outputs::blocks);
  model.block_allocated(here, segment + 8192, 512, 0, {stream_a});
  model.op_ended({});
  launch(segment, segment + 8192);
  ASSERT_EQ(last_launch().size(), 2u);
  expect_access(last_launch()[1], 0, 512, access_mode::write, access_origin::exact);
  model.block_freed(here, segment + 8192);
  launch(segment, segment);
  model.op_ended({});
  ASSERT_EQ(last_launch().size(), 1u);
  expect_access(last_launch()[0], 0, 256, access_mode::read, access_origin::exact);
}

// Without op_outputs::blocks (the Python dispatch mode, another allocator
// backend) a block handed out inside the operator is no span by itself.
TEST_F(OperatorFootprint, BlocksAreSpansOnlyWhenTheOperatorSaysSo) {
  const annotated_range in[] = {{segment, 256, access_mode::read}};
  model.op_began(in, op_outputs::none);
  model.block_allocated(here, segment + 8192, 512, 0, {stream_a});
  launch(segment, segment + 8192);
  model.op_ended({});
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 2u);
  EXPECT_EQ(accesses[1].origin, access_origin::inferred);
}

// The inferred footprint a word in no span adds is its allocation's: every
// word into that allocation, one in a span too, is folded into it.
TEST_F(OperatorFootprint, AWordInNoSpanAddsItsAllocationsWholeFootprint) {
  const annotated_range in[] = {{segment + 4096, 1024, access_mode::read}};
  model.op_began(in, op_outputs::none);
  launch(segment + 4096, segment + 65536);  // the second word is in no span
  model.op_ended({});
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 2u);
  EXPECT_EQ(accesses[0].origin, access_origin::exact);
  EXPECT_EQ(accesses[1].origin, access_origin::inferred);
  EXPECT_EQ(accesses[1].range.offset, 4096u);  // from the lower word on, not 65536
  EXPECT_EQ(accesses[1].range.size, (2u << 20) - 4096u);
  // And the words into another allocation only are left out of it.
  const annotated_range both[] = {{segment, 256, access_mode::read}};
  model.op_began(both, op_outputs::none);
  launch(segment, workspace + 512);
  model.op_ended({});
  const auto second = last_launch();
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[1].range.offset, 512u);
  EXPECT_EQ(second[1].range.size, (1u << 20) - 512u);
}

TEST_F(OperatorFootprint, OutsideAnOperatorFootprintsStayInferred) {
  model.op_began({}, op_outputs::none);
  model.op_ended({});
  launch(segment + 4096, segment + 65536);
  const auto accesses = last_launch();
  ASSERT_EQ(accesses.size(), 1u);  // folded per allocation, as before
  EXPECT_EQ(accesses[0].origin, access_origin::inferred);
}

TEST_F(OperatorFootprint, AnUnbalancedEndIsIgnored) {
  model.op_ended({});
  launch(segment, segment);
  EXPECT_EQ(last_launch().at(0).origin, access_origin::inferred);
}

// A CPU operator's runs of one pinned buffer stay apart (folded, their
// hull would be an exact access of bytes the view does not hold), and a
// hull stays inferred.
TEST_F(OperatorFootprint, HostAccessesKeepTheirSpansApartAndTheirOrigins) {
  const annotated_range spans[] = {torch_span(segment, 64, 2), torch_span(segment + 512, 64, 2),
                                   torch_span(segment + 4096, 4096, 1 | span_hull)};
  model.host_accessed(here, spans, "aten::zero_ on the CPU");
  const auto accesses = sink.last<host_access>().accesses;
  ASSERT_EQ(accesses.size(), 3u);
  expect_access(accesses[0], 0, 64, access_mode::write, access_origin::exact);
  expect_access(accesses[1], 512, 64, access_mode::write, access_origin::exact);
  expect_access(accesses[2], 4096, 4096, access_mode::read, access_origin::inferred);
}

TEST(InterpreterFrames, ReplaceTheNativeFramesUnlessAskedFor) {
  const std::uint32_t ids[] = {7, 3};
  set_interpreter_frames(ids);
  unwinder_call_sites python_only(16);
  const auto site = python_only.capture(0);
  ASSERT_EQ(site.frames.size(), 2u);
  EXPECT_EQ(site.frames[0], interpreter_frame_address(7));
  EXPECT_EQ(site.frames[1], interpreter_frame_address(3));
  unwinder_call_sites both(16, true);
  const auto mixed = both.capture(0);
  ASSERT_GT(mixed.frames.size(), 2u);
  EXPECT_EQ(mixed.frames.back(), interpreter_frame_address(3));
  EXPECT_LT(mixed.frames.front(), interpreter_frame_base);
  set_interpreter_frames({});
  EXPECT_LT(python_only.capture(0).frames.front(), interpreter_frame_base);
}

}  // namespace
}  // namespace streamsan::injection
